// The CLI on a corrupt model: `turbospark inspect` must exit 1 with an error message on stderr,
// not die from a signal (the harness asserts that for every run).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_harness.h"
#include "gguf/gguf_test_util.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

TEST(CliCorrupt, InspectOfCorruptFilesFailsCleanly) {
  test::ScratchDir dir;
  const std::string whole = dir.file("whole.gguf");
  test::write_small_model(whole);
  const std::vector<uint8_t> bytes = test::read_bytes(whole);

  std::vector<std::vector<uint8_t>> corrupt;
  corrupt.emplace_back(bytes.begin(), bytes.begin() + 100);  // cut inside the metadata
  {
    auto g = GgufFile::open(whole);  // cut one byte short of the last tensor's data
    const GgufTensor& last = g->tensors().back();
    corrupt.emplace_back(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(g->data_offset() + last.offset + last.n_bytes - 1));
  }
  corrupt.push_back(test::RawGguf().header(3, 0, uint64_t{1} << 63).zeros(64).bytes);
  corrupt.push_back(test::RawGguf().header(1, 0, 0).bytes);
  for (size_t i = 0; i < corrupt.size(); ++i) {
    SCOPED_TRACE(i);
    const std::string path = dir.file(fmt::format("corrupt{}.gguf", i));
    test::write_bytes(path, corrupt[i]);
    const test::CliRun o = test::run_cli({"inspect", path});
    EXPECT_EQ(o.code, 1);
    EXPECT_THAT(o.err, HasSubstr("error"));
  }
}

}  // namespace
}  // namespace ts
