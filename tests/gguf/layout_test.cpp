// Where tensors land: general.alignment is honoured by writer and reader alike, tensor bytes are
// found where they were written, and only GGUF versions 2 and 3 are accepted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_test_util.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

void expect_pattern(const GgufTensor& t, uint64_t j) {
  for (uint64_t k = 0; k < t.n_bytes; ++k)
    ASSERT_EQ(t.data[k], static_cast<uint8_t>(k * 7 + j)) << t.name << " byte " << k;
}

class Alignment : public ::testing::TestWithParam<uint64_t> {};

TEST_P(Alignment, TensorsAndDataSectionAreAligned) {
  test::ScratchDir dir;
  const std::string path = dir.file("a.gguf");
  test::write_small_model(path, GetParam());
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->alignment(), GetParam());
  EXPECT_EQ(g->data_offset() % GetParam(), 0u);
  EXPECT_EQ(g->get_int("general.alignment", 32), static_cast<int64_t>(GetParam()));
  ASSERT_EQ(g->tensors().size(), 4u);
  for (uint64_t j = 0; j < 4; ++j) {
    const GgufTensor& t = g->tensors()[j];
    EXPECT_EQ(t.offset % GetParam(), 0u) << t.name;
    EXPECT_EQ(static_cast<uint64_t>(t.data - g->file().data()), g->data_offset() + t.offset);
    expect_pattern(t, j);
  }
}

INSTANTIATE_TEST_SUITE_P(Gguf, Alignment, ::testing::Values(32, 64, 4096));

TEST(Layout, TensorShapesTypesAndSizes) {
  test::ScratchDir dir;
  const std::string path = dir.file("s.gguf");
  test::write_small_model(path);
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->version(), 3u);
  const GgufTensor& q8 = g->tensor("q8");
  EXPECT_EQ(q8.type, GgmlType::Q8_0);
  EXPECT_EQ(q8.dims, (std::vector<uint64_t>{64, 2}));
  EXPECT_EQ(q8.n_elements, 128u);
  EXPECT_EQ(q8.n_bytes, 4u * 34);
  EXPECT_EQ(q8.row_bytes(), 2u * 34);
  const GgufTensor& mx = g->tensor("mx");
  EXPECT_EQ(mx.dims, (std::vector<uint64_t>{32, 1, 2, 1}));
  EXPECT_EQ(mx.dim(2), 2u);
  EXPECT_EQ(mx.dim(7), 1u);
  EXPECT_EQ(mx.n_bytes, 2u * 17);
  EXPECT_EQ(g->tensor("f16").n_bytes, 10u);
  // The file ends right after the last tensor's (unpadded) bytes or its padding, nothing more.
  const GgufTensor& last = g->tensors().back();
  EXPECT_LE(g->file().size() - (g->data_offset() + last.offset + last.n_bytes), g->alignment());
}

// The same small file, hand-made, under a given version number.
std::vector<uint8_t> versioned(uint32_t version) {
  test::RawGguf r;
  r.header(version, 1, 1).kv_u32("general.x", 5).tensor("t", {4}, 0, 0).pad(32).zeros(16);
  return r.bytes;
}

TEST(Layout, Versions2And3AreAccepted) {
  test::ScratchDir dir;
  for (uint32_t v : {2u, 3u}) {
    EXPECT_EQ(test::open_error(dir.file("v.gguf"), versioned(v)), "") << "version " << v;
    auto g = GgufFile::open(dir.file("v.gguf"));
    EXPECT_EQ(g->version(), v);
    EXPECT_EQ(g->get_int("general.x"), 5);
    EXPECT_EQ(g->tensor("t").n_bytes, 16u);
  }
}

TEST(Layout, OtherVersionsAreRejected) {
  test::ScratchDir dir;
  const std::string p = dir.file("v.gguf");
  EXPECT_THAT(test::open_error(p, versioned(1)), HasSubstr("GGUF version 1 is not supported"));
  EXPECT_THAT(test::open_error(p, versioned(0)), HasSubstr("unsupported GGUF version 0"));
  EXPECT_THAT(test::open_error(p, versioned(4)), HasSubstr("unsupported GGUF version 4"));
  EXPECT_THAT(test::open_error(p, versioned(0x03000000)), HasSubstr("big-endian"));
}

}  // namespace
}  // namespace ts
