// The reference decoder against gguf-py (tests/data/quant/*.bin, written by gen_vectors.py), the
// documented nibble order of Q4_0 and MXFP4 on hand-made blocks, and every fast decoder against the
// reference, bit for bit, on those vectors and on random bytes.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "quant/kernels.h"
#include "quant_test_util.h"

namespace ts::quant {
namespace {

struct Vectors {
  GgmlType type;
  std::vector<uint8_t> blocks;
  std::vector<float> expected;
};

Vectors load(const std::string& name) {
  std::ifstream f(std::string(TS_TEST_DATA) + "/quant/" + name + ".bin", std::ios::binary);
  EXPECT_TRUE(f) << name;
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  uint32_t head[2] = {0, 0};
  std::memcpy(head, raw.data(), std::min<size_t>(raw.size(), 8));
  Vectors v{static_cast<GgmlType>(head[0]), {}, std::vector<float>(head[1])};
  const size_t nbytes = row_bytes(v.type, head[1]);
  EXPECT_EQ(raw.size(), 8 + nbytes + 4 * v.expected.size()) << name;
  v.blocks.assign(raw.begin() + 8, raw.begin() + 8 + static_cast<long>(nbytes));
  std::memcpy(v.expected.data(), raw.data() + 8 + nbytes, 4 * v.expected.size());
  return v;
}

class ReferenceDecode : public ::testing::TestWithParam<GgmlType> {};

TEST_P(ReferenceDecode, MatchesGgufPyBitForBit) {
  const Vectors v = load(std::string(type_name(GetParam())));
  ASSERT_EQ(v.type, GetParam());
  std::vector<float> got(v.expected.size());
  dequantize_ref(v.type, v.blocks.data(), got.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(v.expected[i]))
        << type_name(v.type) << " element " << i << ": " << got[i] << " vs " << v.expected[i];
}

TEST_P(ReferenceDecode, FastDecodersEqualReference) {
  const Vectors v = load(std::string(type_name(GetParam())));
  const auto n = static_cast<int64_t>(v.expected.size());
  std::vector<float> ref(v.expected.size());
  dequantize_ref(v.type, v.blocks.data(), ref.data(), n);
  for (Isa isa : test::supported_isas()) {
    const DequantFn f = kernels_for(isa).dequant[type_index(v.type)];
    if (!f) continue;
    std::vector<float> got(ref.size(), -1.f);
    // an odd element count for the plain formats exercises their scalar tail
    const int64_t m = type_info(v.type).block_elems == 1 ? n - 3 : n;
    f(v.blocks.data(), got.data(), m);
    for (int64_t i = 0; i < m; ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(ref[i])) << isa_name(isa) << " " << i;
  }
  std::vector<float> pub(ref.size());
  dequantize(v.type, v.blocks.data(), pub.data(), n);
  EXPECT_EQ(0, std::memcmp(pub.data(), ref.data(), 4 * ref.size()));
}

// Raw random bytes, scales included (so zeros, subnormals, infinities and NaNs of d, m and dmin),
// at an odd address: every vector decoder of every ISA must reproduce the reference bit for bit.
// Only a NaN's payload may differ: which of two NaN operands an add returns is the compiler's
// choice of operand order, in the reference as in the vector code.
TEST_P(ReferenceDecode, FastDecodersEqualReferenceOnRandomBytes) {
  const GgmlType t = GetParam();
  const TypeInfo& ti = type_info(t);
  const int64_t n = 128 * (ti.block_elems == 1 ? 8 : ti.block_elems);
  std::mt19937 rng(static_cast<uint32_t>(t));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> raw(1 + row_bytes(t, n));
  for (uint8_t& b : raw) b = static_cast<uint8_t>(byte(rng));
  const uint8_t* src = raw.data() + 1;
  std::vector<float> ref(static_cast<size_t>(n));
  dequantize_ref(t, src, ref.data(), n);
  int fast = 0;
  for (Isa isa : test::supported_isas()) {
    const DequantFn f = kernels_for(isa).dequant[type_index(t)];
    if (!f) continue;
    ++fast;
    std::vector<float> got(ref.size(), -1.f);
    f(src, got.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(ref[i])) ASSERT_TRUE(std::isnan(got[i])) << isa_name(isa) << " " << i;
      else ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(ref[i])) << isa_name(isa) << " " << i;
    }
  }
  // every format with a dot kernel has a vector decoder wherever a vector table exists (F32 is a copy)
  if (t != GgmlType::F32) {
    EXPECT_EQ(fast, static_cast<int>(test::supported_isas().size()) - 1);
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, ReferenceDecode, ::testing::ValuesIn(test::dot_types()),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// Byte j holds element j in its low nibble and element j + 16 in its high nibble.
std::vector<uint8_t> nibble_block(uint8_t scale_lo, uint8_t scale_hi, bool one_byte_scale) {
  std::vector<uint8_t> b;
  b.push_back(scale_lo);
  if (!one_byte_scale) b.push_back(scale_hi);
  for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  return b;
}

TEST(ReferenceDecode, Q4_0NibbleOrder) {
  const auto b = nibble_block(0x00, 0x3C, false);  // d = 1.0
  float y[32];
  dequantize_ref(GgmlType::Q4_0, b.data(), y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j - 8.0f) << j;
    EXPECT_EQ(y[j + 16], 7.0f - j) << j;
  }
  EXPECT_EQ(y[0], -8.0f);
  EXPECT_EQ(y[16], 7.0f);
}

TEST(ReferenceDecode, Mxfp4NibbleOrderAndValues) {
  const auto b = nibble_block(127, 0, true);  // e = 127: scale 2^0, values are plain E2M1
  // code 8 ("-0") is stored as integer 0 in the doubled table, so it decodes to +0 as in ggml
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, 0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  float y[32];
  for (Isa isa : test::supported_isas()) {
    const DequantFn f = kernels_for(isa).dequant[type_index(GgmlType::MXFP4)];
    if (f) f(b.data(), y, 32);
    else dequantize_ref(GgmlType::MXFP4, b.data(), y, 32);
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(std::bit_cast<uint32_t>(y[j]), std::bit_cast<uint32_t>(e2m1[j])) << isa_name(isa) << " " << j;
      EXPECT_EQ(y[j + 16], e2m1[15 - j]) << isa_name(isa) << " " << j;
    }
  }
  auto b2 = b;
  b2[0] = 130;  // scale 2^3
  dequantize_ref(GgmlType::MXFP4, b2.data(), y, 32);
  EXPECT_EQ(y[7], 48.0f);
  EXPECT_EQ(y[16], -48.0f);
}

}  // namespace
}  // namespace ts::quant
