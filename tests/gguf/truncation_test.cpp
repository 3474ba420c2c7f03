// A valid file cut short at every byte offset must be a clear ts::Error, never a crash or an
// out-of-bounds read (this suite also runs under ASan, which turns any over-read into a failure).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_test_util.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

TEST(Truncation, EveryPrefixOfAValidFileIsAnError) {
  test::ScratchDir dir;
  const std::string whole = dir.file("whole.gguf");
  test::write_small_model(whole);
  const std::vector<uint8_t> bytes = test::read_bytes(whole);
  auto g = GgufFile::open(whole);
  const GgufTensor& last = g->tensors().back();
  // Prefixes that still hold every tensor byte (only trailing padding cut) are complete files.
  const size_t complete = g->data_offset() + last.offset + last.n_bytes;
  ASSERT_GT(bytes.size(), 200u);

  const std::string cut = dir.file("cut.gguf");
  for (size_t n = 0; n < complete; ++n) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string err = test::open_error(cut, prefix);
    ASSERT_NE(err, "") << "a file cut at byte " << n << " of " << bytes.size() << " opened";
    EXPECT_THAT(err, HasSubstr(cut)) << "at " << n;
    if (n >= 24) {  // past the fixed header every message says what ran out
      EXPECT_THAT(err, AnyOf(HasSubstr("truncated"), HasSubstr("file ends"), HasSubstr("more than the")))
          << "at " << n << ": " << err;
    }
  }
  for (size_t n = complete; n <= bytes.size(); ++n) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(test::open_error(cut, prefix), "") << "cut at " << n;
  }
}

TEST(Truncation, TensorDataCutShortNamesTheTensor) {
  test::ScratchDir dir;
  const std::string whole = dir.file("whole.gguf");
  test::write_small_model(whole);
  std::vector<uint8_t> bytes = test::read_bytes(whole);
  auto g = GgufFile::open(whole);
  const GgufTensor& last = g->tensors().back();
  bytes.resize(g->data_offset() + last.offset + last.n_bytes - 1);
  EXPECT_THAT(test::open_error(dir.file("cut.gguf"), bytes), HasSubstr("tensor 'mx' needs bytes"));
}

TEST(Truncation, EmptyAndTinyFiles) {
  test::ScratchDir dir;
  const std::string p = dir.file("t.gguf");
  EXPECT_THAT(test::open_error(p, {}), HasSubstr("not a GGUF file"));
  EXPECT_THAT(test::open_error(p, {'G', 'G'}), HasSubstr("not a GGUF file"));
  EXPECT_THAT(test::open_error(p, {'G', 'G', 'U', 'X', 3, 0, 0, 0}), HasSubstr("bad magic"));
  EXPECT_THAT(test::open_error(p, {'G', 'G', 'U', 'F', 3, 0}), HasSubstr("truncated"));
}

TEST(Truncation, DirectoriesAndMissingFilesAreErrors) {
  test::ScratchDir dir;
  try {
    GgufFile::open(dir.file(""));
    FAIL() << "a directory opened";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not a regular file"));
  }
  try {
    GgufFile::open(dir.file("absent.gguf"));
    FAIL() << "a missing file opened";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("absent.gguf"));
  }
}

}  // namespace
}  // namespace ts
