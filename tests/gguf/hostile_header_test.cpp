// Hand-made headers with one thing wrong each: absurd counts and lengths, impossible shapes,
// bad offsets, unknown types, duplicates. Each must be a ts::Error whose message names the problem
// (and no huge allocation or over-read may happen first: the counts are up to 2^64 - 1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_test_util.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;
using test::RawGguf;

constexpr uint32_t kF32 = 0, kQ8_0 = 8;
constexpr uint64_t kHuge = uint64_t{1} << 63;

class HostileHeader : public ::testing::Test {
 protected:
  std::string error(const RawGguf& r) { return test::open_error(dir_.file("bad.gguf"), r.bytes); }
  test::ScratchDir dir_;
};

// A well-formed file with one key and one F32 tensor of 4 elements, as the baseline.
TEST_F(HostileHeader, BaselineOpens) {
  RawGguf r;
  r.header(3, 1, 1).kv_u32("k", 1).tensor("t", {4}, kF32, 0).pad(32).zeros(16);
  EXPECT_EQ(error(r), "");
}

TEST_F(HostileHeader, AbsurdCounts) {
  EXPECT_THAT(error(RawGguf().header(3, 0, kHuge).zeros(64)), HasSubstr("claims 9223372036854775808 metadata entries"));
  EXPECT_THAT(error(RawGguf().header(3, ~uint64_t{0}, 0).zeros(64)), HasSubstr("claims 18446744073709551615 tensors"));
  // a string length of 2^63 in a key, in a value, and in a tensor name
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).u64(kHuge).zeros(16)), HasSubstr("metadata key claims 9223372036854775808 bytes"));
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).str("k").u32(8).u64(kHuge).zeros(16)),
              HasSubstr("string value claims 9223372036854775808 bytes"));
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).u64(kHuge).zeros(40)), HasSubstr("tensor name claims 9223372036854775808 bytes"));
  // array lengths of 2^63 for u8, string and nested-array elements
  for (uint32_t et : {0u, 8u, 9u})
    EXPECT_THAT(error(RawGguf().header(3, 0, 1).str("arr").u32(9).u32(et).u64(kHuge).zeros(32)),
                HasSubstr("'arr' claims 9223372036854775808 array elements"))
        << "element type " << et;
  // a length that fits the file's size but not what is left after the header
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).str("arr").u32(9).u32(4).u64(5).u32(1).u32(2)),
              HasSubstr("claims 5 array elements"));
}

TEST_F(HostileHeader, NestingDepthIsBounded) {
  RawGguf r;
  r.header(3, 0, 1).str("deep").u32(9);
  for (int i = 0; i < 100; ++i) r.u32(9).u64(1);
  r.zeros(64);
  EXPECT_THAT(error(r), HasSubstr("'deep' nests arrays deeper than"));
}

TEST_F(HostileHeader, UnknownValueTypes) {
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).str("k").u32(13).zeros(16)), HasSubstr("'k' has unknown value type 13"));
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).str("k").u32(9).u32(0xffffffff).u64(0).zeros(16)),
              HasSubstr("'k' has unknown value type 4294967295"));
}

TEST_F(HostileHeader, BoolsMustBe0Or1) {
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).str("b").u32(7).u8(2)), HasSubstr("'b' has a bool of value 2"));
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).str("b").u32(9).u32(7).u64(3).u8(1).u8(0).u8(255)),
              HasSubstr("'b' has a bool of value 255"));
  EXPECT_EQ(error(RawGguf().header(3, 0, 1).str("b").u32(7).u8(1)), "");
}

TEST_F(HostileHeader, DuplicatesAndEmptyNames) {
  EXPECT_THAT(error(RawGguf().header(3, 0, 2).kv_u32("k", 1).kv_u32("k", 2)), HasSubstr("metadata key 'k' appears twice"));
  EXPECT_THAT(error(RawGguf().header(3, 2, 0).tensor("t", {4}, kF32, 0).tensor("t", {4}, kF32, 32).pad(32).zeros(64)),
              HasSubstr("tensor 't' appears twice"));
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).kv_u32("", 1)), HasSubstr("empty key"));
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("", {4}, kF32, 0).pad(32).zeros(16)), HasSubstr("empty name"));
}

TEST_F(HostileHeader, DimensionCounts) {
  for (uint32_t n_dims : {0u, 5u, 0xffffffffu}) {
    RawGguf r;
    r.header(3, 1, 0).str("t").u32(n_dims).zeros(64);
    EXPECT_THAT(error(r), HasSubstr(fmt::format("tensor 't' has {} dimensions (1 to 4 allowed)", n_dims)));
  }
}

TEST_F(HostileHeader, HugeDimensionsAndElementCountOverflow) {
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {kHuge}, kF32, 0).pad(32)), HasSubstr("'t' has an invalid dimension"));
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {4, 0}, kF32, 0).pad(32)), HasSubstr("invalid dimension 0"));
  // each dimension is plausible, their product is not
  const uint64_t d = uint64_t{1} << 40;
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {d, d}, kF32, 0).pad(32)), HasSubstr("element count: size overflows 64 bits"));
  // the element count fits 64 bits, the byte size does not
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {d, uint64_t{1} << 22}, kF32, 0).pad(32)),
              HasSubstr("tensor size: size overflows 64 bits"));
}

TEST_F(HostileHeader, TensorTypesAndBlockSizes) {
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {32}, 4, 0).pad(32).zeros(64)), HasSubstr("'t' has unknown type 4"));
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {32}, 1000, 0).pad(32).zeros(64)), HasSubstr("'t' has unknown type 1000"));
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {33, 2}, kQ8_0, 0).pad(32).zeros(128)),
              HasSubstr("row of 33 elements, not a multiple of the block size 32"));
}

TEST_F(HostileHeader, OffsetsAndDataPastTheEnd) {
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {4}, kF32, 8).pad(32).zeros(64)),
              HasSubstr("'t' offset 8 is not a multiple of the alignment 32"));
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {4}, kF32, 32).pad(32).zeros(32)), HasSubstr("tensor 't' needs bytes"));
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {4}, kF32, ~uint64_t{31}).pad(32).zeros(32)),
              HasSubstr("tensor offset: size overflows 64 bits"));
  // the data section itself is missing
  EXPECT_THAT(error(RawGguf().header(3, 1, 0).tensor("t", {4}, kF32, 0)), HasSubstr("tensor data section is missing"));
}

TEST_F(HostileHeader, AlignmentMustBeAPowerOfTwo) {
  for (uint32_t a : {0u, 3u, 48u})
    EXPECT_THAT(error(RawGguf().header(3, 0, 1).kv_u32("general.alignment", a)), HasSubstr("general.alignment must be a positive power of two"))
        << a;
  EXPECT_THAT(error(RawGguf().header(3, 0, 1).str("general.alignment").u32(8).str("64")),
              HasSubstr("general.alignment must be a positive power of two"));
  // a valid non-default alignment moves the data section
  RawGguf ok;
  ok.header(3, 1, 1).kv_u32("general.alignment", 256).tensor("t", {4}, kF32, 0).pad(256).zeros(16);
  EXPECT_EQ(error(ok), "");
  EXPECT_EQ(GgufFile::open(dir_.file("bad.gguf"))->data_offset(), 256u);
}

}  // namespace
}  // namespace ts
