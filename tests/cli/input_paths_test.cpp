// Inputs that are not regular files (issue 10, item 2): a FIFO given as the model or the token file
// used to block forever in open(); a device never ends. Each is refused at once with a message
// saying what the path is.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "cli/cli_harness.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

const test::Fixture kFixture{"llama-dense-q8_0", test::models_dir()};

class InputPaths : public testing::Test {
 protected:
  InputPaths() {
    EXPECT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    opt_.timeout_s = 30;  // a blocked open() shows as a timeout, and the harness fails the test
  }
  void expect_refused(const std::vector<std::string>& args, const std::string& kind) {
    const test::CliRun r = test::run_cli(args, opt_);
    EXPECT_EQ(r.code, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr(kind));
    EXPECT_LT(r.seconds, 10);
  }
  test::ScratchDir dir_;
  std::string fifo_ = dir_.file("fifo");
  test::ProcessOptions opt_;
};

TEST_F(InputPaths, FifoModelIsRefusedWithoutBlocking) {
  expect_refused({"inspect", fifo_}, "is a FIFO");
  expect_refused({"logits", "-m", fifo_, "--tokens", kFixture.tokens(), "-o", dir_.file("o.f32")}, "is a FIFO");
  expect_refused({"run", "-m", fifo_, "-p", "hi"}, "is a FIFO");
}

TEST_F(InputPaths, FifoTokenFileIsRefusedWithoutBlocking) {
  expect_refused({"logits", "-m", kFixture.gguf(), "--tokens", fifo_, "-o", dir_.file("o.f32")}, "is a FIFO");
}

TEST_F(InputPaths, DevicesAndDirectoriesAreNamed) {
  expect_refused({"inspect", "/dev/zero"}, "is a character device");
  expect_refused({"inspect", dir_.path()}, "is a directory");
  expect_refused({"logits", "-m", kFixture.gguf(), "--tokens", "/dev/zero", "-o", dir_.file("o.f32")}, "is a character device");
}

}  // namespace
}  // namespace ts
