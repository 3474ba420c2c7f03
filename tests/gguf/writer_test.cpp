// GgufWriter's contract: it refuses tensors a reader would reject, it insists every declared byte
// is written (no more, no less), and a file appears under its name only after finish().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/gguf_test_util.h"
#include "gguf/gguf_writer.h"
#include "util/error.h"

namespace ts {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Writer, RefusesTensorsAReaderWouldReject) {
  test::ScratchDir dir;
  GgufWriter w(dir.file("w.gguf"));
  EXPECT_THAT(message([&] { w.add_tensor("z", GgmlType::F32, {4, 0}); }), HasSubstr("'z': a dimension of 0"));
  EXPECT_THAT(message([&] { w.add_tensor("r", GgmlType::Q8_0, {48}); }), HasSubstr("row of 48 is not a multiple of Q8_0's block size 32"));
  EXPECT_THAT(message([&] { w.add_tensor("d", GgmlType::F32, {1, 1, 1, 1, 1}); }), HasSubstr("1 to 4 dimensions"));
  EXPECT_THAT(message([&] { w.add_tensor("e", GgmlType::F32, {}); }), HasSubstr("1 to 4 dimensions"));
  EXPECT_THAT(message([] { GgufWriter bad("x.gguf", 48); }), HasSubstr("power of two"));
}

TEST(Writer, ShortOrExtraDataIsAnErrorAndLeavesNoFile) {
  test::ScratchDir dir;
  const std::string path = dir.file("w.gguf");
  {
    GgufWriter w(path);
    w.add_tensor("t", GgmlType::F32, {4});
    w.begin_data();
    const float x[4] = {};
    w.write(x, 8);
    EXPECT_THAT(message([&] { w.finish(); }), HasSubstr("tensor 't' was not written in full"));
    EXPECT_TRUE(fs::exists(path + ".partial"));
  }
  EXPECT_FALSE(fs::exists(path + ".partial"));  // removed by the destructor
  EXPECT_FALSE(fs::exists(path));
  {
    GgufWriter w(path);
    w.add_tensor("t", GgmlType::F32, {4});
    w.begin_data();
    const float x[5] = {};
    EXPECT_THAT(message([&] { w.write(x, sizeof x); }), HasSubstr("more tensor data than declared"));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(Writer, FinishRenamesIntoPlaceAndPiecesMayBeAnySize) {
  test::ScratchDir dir;
  const std::string path = dir.file("w.gguf");
  {
    GgufWriter w(path);
    w.set_string("general.architecture", "x");
    w.add_tensor("a", GgmlType::F32, {3});
    w.add_tensor("b", GgmlType::F16, {5});
    w.begin_data();
    EXPECT_FALSE(fs::exists(path));
    // 12 + 10 bytes written as 5 + 9 + 8: pieces straddle the tensor boundary.
    const uint8_t bytes[22] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};
    w.write(bytes, 5);
    w.write(bytes + 5, 9);
    w.write(bytes + 14, 8);
    w.finish();
    EXPECT_EQ(w.written_bytes(), fs::file_size(path));
  }
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->tensor("a").data[0], 1);
  EXPECT_EQ(g->tensor("a").data[11], 12);
  EXPECT_EQ(g->tensor("b").data[0], 13);
  EXPECT_EQ(g->tensor("b").data[9], 22);
  EXPECT_EQ(g->tensor("b").offset, 32u);  // "a" padded to the alignment
  EXPECT_FALSE(fs::exists(path + ".partial"));
}

TEST(Writer, LaterSetReplacesEarlierValue) {
  test::ScratchDir dir;
  const std::string path = dir.file("w.gguf");
  GgufWriter w(path);
  w.set_u32("k", 1);
  w.set_string("k", "two");
  w.finish();
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->metadata().size(), 1u);
  EXPECT_EQ(g->get_string("k"), "two");
}

}  // namespace
}  // namespace ts
