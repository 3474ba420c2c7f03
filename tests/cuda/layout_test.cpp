// The CUDA backend's weight layout (backend/cuda/weight_layout.h) on the host: every format
// repacked and decoded again gives exactly the reference decoder's values, and the layout keeps
// the file's bytes plus at most 15 of padding per row. Needs no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cuda/weight_layout.h"
#include "quant/kernels.h"

namespace ts {
namespace {

const GgmlType kTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                           GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

class Layout : public testing::TestWithParam<GgmlType> {};

TEST_P(Layout, RepackedRowsDecodeToTheReferenceValues) {
  const GgmlType t = GetParam();
  const int64_t rows = 5, cols = 768;  // three K super-blocks, 24 groups
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 0.05f);
  const uint64_t row_bytes = ts::row_bytes(t, cols);
  std::vector<uint8_t> native(rows * row_bytes);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> x(cols);
    for (float& v : x) v = g(rng) * (1.0f + r);
    quant::quantize_weights(t, x.data(), native.data() + r * row_bytes, cols);
  }
  const gpu::RowLayout L = gpu::row_layout(t, cols);
  EXPECT_EQ(L.stride % 16, 0u);
  EXPECT_GE(L.stride, row_bytes);
  EXPECT_LT(L.stride, row_bytes + 16);
  std::vector<uint8_t> packed(rows * L.stride, 0xAB);  // garbage: every byte must be written
  for (int64_t r = 0; r < rows; ++r) gpu::repack_row(t, native.data() + r * row_bytes, packed.data() + r * L.stride, cols);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> want(cols), got(cols);
    quant::dequantize_ref(t, native.data() + r * row_bytes, want.data(), cols);
    for (int64_t grp = 0; grp < cols / 32; ++grp) gpu::decode_group(t, packed.data() + r * L.stride, cols, grp, got.data() + grp * 32);
    for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(std::memcmp(&want[j], &got[j], 4), 0) << "row " << r << " value " << j << ": " << want[j] << " vs " << got[j];
    for (uint32_t b = L.lo + L.hi + L.aux; b < L.stride; ++b) EXPECT_EQ(packed[r * L.stride + b], 0) << "padding byte " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Layout, testing::ValuesIn(kTypes),
                         [](const testing::TestParamInfo<GgmlType>& p) { return std::string(type_name(p.param)); });

}  // namespace
}  // namespace ts
