// Where the commands write (issue 10, items 1 and 5), through the CLI: a regular file is replaced
// atomically and keeps its permissions; a symbolic link is followed and stays a link; a character
// device and a FIFO are written in place, never replaced by a regular file; "-" is stdout; a
// directory is an error; and every failed write (a full device, a closed pipe, stdout on a full
// device) exits 1 with a message instead of reporting success or dying from SIGPIPE. The devices
// are made with mknod inside the scratch directory, so no test ever writes near the real /dev.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "cli/cli_harness.h"

namespace ts {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const test::Fixture kFixture{"llama-dense-q8_0", test::models_dir()};

class OutputPaths : public testing::Test {
 protected:
  test::CliRun logits(const std::string& out, const test::ProcessOptions& opt = {}) {
    return test::run_cli({"logits", "-m", kFixture.gguf(), "--tokens", kFixture.tokens(), "-o", out, "-t", "2"}, opt);
  }
  // The logits as written to a plain new file: what every other destination must receive.
  const std::string& expected() {
    if (expected_.empty()) {
      const test::CliRun r = logits(dir_.file("expected.f32"));
      EXPECT_EQ(r.code, 0) << r.err;
      expected_ = test::read_text(dir_.file("expected.f32"));
      EXPECT_FALSE(expected_.empty());
    }
    return expected_;
  }
  // A character device node in the scratch directory (1,3 is null, 1,7 is full).
  std::string device(const char* name, unsigned minor) {
    const std::string path = dir_.file(name);
    if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) != 0) ADD_FAILURE() << "mknod " << path << " failed";
    return path;
  }
  static bool is_char_device(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
  }

  test::ScratchDir dir_;
  std::string expected_;
};

TEST_F(OutputPaths, NewAndExistingRegularFiles) {
  const std::string out = dir_.file("out.f32");
  test::write_text(out, "old");
  ::chmod(out.c_str(), 0640);
  const test::CliRun r = logits(out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::read_text(out), expected());
  EXPECT_EQ(fs::status(out).permissions(), fs::perms(0640)) << "a replaced file keeps its permissions";
  EXPECT_FALSE(fs::exists(out + ".partial"));
}

TEST_F(OutputPaths, SymlinkIsFollowedAndStaysALink) {
  const std::string target = dir_.file("target.f32"), link = dir_.file("link.f32");
  test::write_text(target, "old");
  fs::create_symlink("target.f32", link);
  ASSERT_EQ(logits(link).code, 0);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(test::read_text(target), expected());
  // A dangling link names the file to create.
  const std::string dangling = dir_.file("dangling.f32");
  fs::create_symlink("created.f32", dangling);
  ASSERT_EQ(logits(dangling).code, 0);
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(test::read_text(dir_.file("created.f32")), expected());
}

TEST_F(OutputPaths, CharacterDeviceIsWrittenInPlace) {
  const std::string null = device("null", 3);
  const test::CliRun r = logits(null);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(is_char_device(null)) << "the device node was replaced by a regular file";
  EXPECT_FALSE(fs::exists(null + ".partial"));
}

TEST_F(OutputPaths, FifoIsWrittenInPlace) {
  const std::string fifo = dir_.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string want = expected();
  // The test holds a write end itself, so the reader's open() returns at once and the reader sees
  // end-of-file only after both the CLI and the test have closed theirs, whatever the CLI did.
  const int hold = ::open(fifo.c_str(), O_RDWR);
  ASSERT_GE(hold, 0);
  std::string got;
  std::thread reader([&] { got = test::read_text(fifo); });
  const test::CliRun r = logits(fifo);
  ::close(hold);
  reader.join();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(got, want);
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced by a regular file";
}

TEST_F(OutputPaths, DashIsStdout) {
  const test::CliRun r = logits("-");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, expected());
  EXPECT_FALSE(fs::exists("-"));
}

TEST_F(OutputPaths, DirectoryIsAnError) {
  const test::CliRun r = logits(dir_.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("is a directory"));
  EXPECT_TRUE(fs::is_directory(dir_.path()));
}

TEST_F(OutputPaths, SynthFollowsTheSameRules) {
  const std::string target = dir_.file("model.gguf"), link = dir_.file("link.gguf");
  test::write_text(target, "old");
  fs::create_symlink("model.gguf", link);
  test::CliRun r = test::run_cli({"synth", "--arch", "llama", "--preset", "tiny", "-o", link, "--force"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_GT(fs::file_size(target), 1000u);
  const std::string null = device("null", 3);
  r = test::run_cli({"synth", "--arch", "llama", "--preset", "tiny", "-o", null, "--force"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(is_char_device(null));
  // "-" streams the model to stdout: the same bytes as the file.
  r = test::run_cli({"synth", "--arch", "llama", "--preset", "tiny", "-o", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, test::read_text(target));
}

// Failed writes: exit 1 with a message, and no success report after it.
TEST_F(OutputPaths, FullDeviceIsAnError) {
  const std::string full = device("full", 7);
  const test::CliRun r = logits(full);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("No space left on device"));
  EXPECT_TRUE(is_char_device(full));
  const test::CliRun s = test::run_cli({"synth", "--arch", "llama", "--preset", "tiny", "-o", full, "--force"});
  EXPECT_EQ(s.code, 1);
  EXPECT_THAT(s.err, HasSubstr("No space left on device"));
  EXPECT_THAT(s.err, testing::Not(HasSubstr("synth: wrote")));
}

TEST_F(OutputPaths, StdoutOnAFullDeviceIsAnError) {
  const std::string full = device("full", 7);
  test::ProcessOptions opt;
  opt.stdout_path = full;
  const test::CliRun r = logits("-", opt);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("No space left on device"));
  // Buffered stdio output (inspect's tables) fails at the latest when main flushes it.
  const test::CliRun i = test::run_cli({"inspect", kFixture.gguf()}, opt);
  EXPECT_EQ(i.code, 1);
  EXPECT_THAT(i.err, HasSubstr("cannot write to stdout"));
  const test::CliRun h = test::run_cli({"--help"}, opt);
  EXPECT_EQ(h.code, 1);
}

TEST_F(OutputPaths, ClosedPipeIsAnErrorNotASignal) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);  // nobody will ever read
  test::ProcessOptions opt;
  opt.stdout_fd = fds[1];
  const test::CliRun r = logits("-", opt);
  ::close(fds[1]);
  EXPECT_EQ(r.signal, 0) << "killed by SIGPIPE";
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("Broken pipe"));
}

}  // namespace
}  // namespace ts
