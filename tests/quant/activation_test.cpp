// Activation quantization: the weight -> activation pairing, sizes, round-trip error bounds that
// follow from each format's scale, and the rounding conventions shared with llama.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant_test_util.h"

namespace ts::quant {
namespace {

TEST(Activations, Pairing) {
  EXPECT_EQ(activation_type(GgmlType::F16), GgmlType::F32);
  EXPECT_EQ(activation_type(GgmlType::BF16), GgmlType::F32);
  EXPECT_EQ(activation_type(GgmlType::MXFP4), GgmlType::Q8_0);
  EXPECT_EQ(activation_type(GgmlType::Q5_0), GgmlType::Q8_0);
  EXPECT_EQ(activation_type(GgmlType::Q4_1), GgmlType::Q8_1);
  EXPECT_EQ(activation_type(GgmlType::Q6_K), GgmlType::Q8_K);
  EXPECT_EQ(activation_bytes(GgmlType::Q4_0, 64), 68u);
  EXPECT_EQ(activation_bytes(GgmlType::Q5_1, 64), 72u);
  EXPECT_EQ(activation_bytes(GgmlType::Q4_K, 512), 584u);
  EXPECT_EQ(activation_bytes(GgmlType::F16, 10), 40u);
}

// |x - decoded| <= half a step, plus (Q8_0/Q8_1) the fp16 rounding of the stored scale times |q|.
TEST(Activations, RoundTripWithinHalfAStep) {
  std::mt19937 rng(7);
  const int64_t n = 1024;
  auto x = test::gaussian(n, rng, 3.0f);
  x[5] = 0;  // a block of zeros must encode as zeros
  std::fill(x.begin() + 256, x.begin() + 288, 0.0f);
  for (GgmlType w : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q4_K}) {
    const GgmlType a = activation_type(w);
    const int be = type_info(a).block_elems;
    std::vector<uint8_t> q(activation_bytes(w, n));
    quantize_activation(w, x.data(), q.data(), n);
    const auto y = test::dequantize_activation(a, q.data(), n);
    for (int64_t b = 0; b < n / be; ++b) {
      float amax = 0;
      for (int j = 0; j < be; ++j) amax = std::max(amax, std::fabs(x[b * be + j]));
      const double step = amax / 127.0;
      const double slack = a == GgmlType::Q8_K ? 1e-6 * step : 127 * step * 0x1p-11;
      for (int j = 0; j < be; ++j) ASSERT_LE(std::fabs(x[b * be + j] - y[b * be + j]), 0.5 * step + slack) << b << " " << j;
    }
  }
}

TEST(Activations, Q8_1SumAndQ8_KBlockSums) {
  std::mt19937 rng(8);
  const auto x = test::gaussian(512, rng);
  std::vector<uint8_t> q1(activation_bytes(GgmlType::Q5_1, 512)), qk(activation_bytes(GgmlType::Q5_K, 512));
  quantize_activation(GgmlType::Q5_1, x.data(), q1.data(), 512);
  quantize_activation(GgmlType::Q5_K, x.data(), qk.data(), 512);
  for (int b = 0; b < 16; ++b) {
    const uint8_t* blk = q1.data() + b * layout::q8_1_bytes;
    int sum = 0;
    float amax = 0;
    for (int j = 0; j < 32; ++j) {
      sum += static_cast<int8_t>(blk[layout::q8_1_qs + j]);
      amax = std::max(amax, std::fabs(x[32 * b + j]));
    }
    // s is the unrounded d times the code sum, rounded once to fp16
    EXPECT_EQ(load_u16(blk + layout::q8_1_s), fp32_to_fp16(amax / 127.f * static_cast<float>(sum)));
  }
  for (int b = 0; b < 2; ++b) {
    const uint8_t* blk = qk.data() + b * layout::q8_k_bytes;
    int amax_q = 0;
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) {
        const int v = static_cast<int8_t>(blk[layout::q8_k_qs + 16 * g + j]);
        sum += v;
        amax_q = std::max(amax_q, std::abs(v));
      }
      int16_t bs;
      std::memcpy(&bs, blk + layout::q8_k_bsums + 2 * g, 2);
      EXPECT_EQ(bs, sum);
    }
    EXPECT_EQ(amax_q, 127);  // the value of largest magnitude maps to -127
  }
}

// Q8_0 rounds x * 127 / amax half to even, as ggml's AVX quantizer does.
TEST(Activations, Q8_0RoundsHalfToEven) {
  float x[32] = {127.0f, 2.5f, 3.5f, -2.5f, -0.5f, 1.5f};
  uint8_t q[34];
  quantize_activation(GgmlType::Q8_0, x, q, 32);
  EXPECT_EQ(load_f16(q), 1.0f);
  const int8_t want[6] = {127, 2, 4, -2, 0, 2};
  for (int j = 0; j < 6; ++j) EXPECT_EQ(static_cast<int8_t>(q[2 + j]), want[j]) << j;
}

TEST(Activations, FloatPassthrough) {
  const float x[3] = {1.5f, -2.0f, 3.25f};
  float y[3];
  quantize_activation(GgmlType::BF16, x, y, 3);
  EXPECT_EQ(0, std::memcmp(x, y, sizeof x));
}

}  // namespace
}  // namespace ts::quant
