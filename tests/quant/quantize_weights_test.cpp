// Weight quantization round trips on Gaussian data. The bound for a rounding quantizer with step
// delta is an RMS error of delta / sqrt(12) (uniform error in [-delta/2, delta/2]); we measure each
// block's actual step from the stored scales and allow 15% over that model, and also require every
// element of the 32-value linear formats to be within half a step (plus fp16 rounding of the scale).
#include <gtest/gtest.h>

#include <cmath>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant_test_util.h"
#include "util/error.h"

namespace ts::quant {
namespace {

constexpr int64_t kN = 256 * 64;

struct RoundTrip {
  std::vector<float> x, y;
  std::vector<uint8_t> q;
};

RoundTrip round_trip(GgmlType t, uint32_t seed) {
  std::mt19937 rng(seed);
  RoundTrip rt;
  rt.x = test::gaussian(kN, rng);
  // a block of zeros and a block with one outlier
  std::fill(rt.x.begin(), rt.x.begin() + 256, 0.0f);
  rt.x[300] = 9.0f;
  rt.q.resize(row_bytes(t, kN));
  quantize_weights(t, rt.x.data(), rt.q.data(), kN);
  rt.y.resize(kN);
  dequantize_ref(t, rt.q.data(), rt.y.data(), kN);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(rt.y[i], 0.0f) << "zeros must round-trip exactly";
  return rt;
}

double rms(const RoundTrip& rt) {
  double e = 0;
  for (int64_t i = 0; i < kN; ++i) e += double(rt.x[i] - rt.y[i]) * (rt.x[i] - rt.y[i]);
  return std::sqrt(e / kN);
}

// Step of element i from the decoded block scales.
double step(GgmlType t, const uint8_t* q, int64_t i) {
  const TypeInfo& ti = type_info(t);
  const uint8_t* b = q + i / ti.block_elems * ti.block_bytes;
  switch (t) {
    case GgmlType::Q4_0: return std::fabs(unpack_q4_0(b).d);
    case GgmlType::Q4_1: return std::fabs(unpack_q4_1(b).d);
    case GgmlType::Q5_0: return std::fabs(unpack_q5_0(b).d);
    case GgmlType::Q5_1: return std::fabs(unpack_q5_1(b).d);
    case GgmlType::Q8_0: return std::fabs(unpack_q8_0(b).d);
    case GgmlType::Q4_K: { const BlockK u = unpack_q4_k(b); return u.d * u.scale[i % 256 / 16]; }
    case GgmlType::Q5_K: { const BlockK u = unpack_q5_k(b); return u.d * u.scale[i % 256 / 16]; }
    case GgmlType::Q6_K: { const BlockK u = unpack_q6_k(b); return std::fabs(u.d * u.scale[i % 256 / 16]); }
    default: return 0;
  }
}

class LinearRoundTrip : public ::testing::TestWithParam<GgmlType> {};

TEST_P(LinearRoundTrip, RmsMatchesTheStepModel) {
  const GgmlType t = GetParam();
  const RoundTrip rt = round_trip(t, 11);
  double model = 0;
  for (int64_t i = 0; i < kN; ++i) model += step(t, rt.q.data(), i) * step(t, rt.q.data(), i) / 12;
  model = std::sqrt(model / kN);
  const double got = rms(rt);
  RecordProperty("rms", std::to_string(got));
  EXPECT_LE(got, 1.15 * model) << type_name(t);
  EXPECT_GE(got, 0.5 * model) << type_name(t) << ": suspiciously small error for the stored step";
}

INSTANTIATE_TEST_SUITE_P(Formats, LinearRoundTrip,
                         ::testing::Values(GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                           GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

TEST(QuantizeWeights, Linear32ElementsWithinHalfAStep) {
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) {
    const RoundTrip rt = round_trip(t, 12);
    for (int64_t i = 0; i < kN; ++i) {
      const double d = step(t, rt.q.data(), i);
      // the codes were rounded against the unrounded scale; fp16 storage moves d and m by 2^-11
      const double slack = 32 * d * 0x1p-11 + std::fabs(rt.x[i]) * 0x1p-10;
      // Q4_0/Q5_0 map the signed max to code 0 (-8d / -16d); on the other side the top code is only
      // 7d / 15d, so values beyond it are clipped by up to one step.
      const bool symmetric = t == GgmlType::Q4_0 || t == GgmlType::Q5_0;
      const double top = (t == GgmlType::Q4_0 ? 7 : 15) * d;
      const double allowed = symmetric && std::fabs(rt.y[i]) >= top * (1 - 1e-3) ? 1.0 * d : 0.5 * d;
      ASSERT_LE(std::fabs(rt.x[i] - rt.y[i]), allowed + slack) << type_name(t) << " " << i;
    }
  }
}

// Absolute RMS ceilings for unit Gaussians, from delta/sqrt(12) with the typical block range of
// Gaussian samples (max |x| over 32 values ~2.5 sigma, max - min ~4 sigma) and ~20% headroom.
TEST(QuantizeWeights, AbsoluteRmsCeilings) {
  const std::pair<GgmlType, double> ceilings[] = {
      {GgmlType::Q8_0, 0.0075}, {GgmlType::Q5_0, 0.050}, {GgmlType::Q5_1, 0.045}, {GgmlType::Q4_0, 0.100},
      {GgmlType::Q4_1, 0.090},  {GgmlType::Q4_K, 0.090}, {GgmlType::Q5_K, 0.045}, {GgmlType::Q6_K, 0.022},
      {GgmlType::MXFP4, 0.150}};
  for (const auto& [t, ceiling] : ceilings) {
    const double got = rms(round_trip(t, 13));
    RecordProperty(std::string(type_name(t)), std::to_string(got));
    EXPECT_LE(got, ceiling) << type_name(t);
  }
}

// MXFP4: each value decodes to the nearest of the 16 codes at its block's scale, and the block's
// exponent is no worse than ggml's choice (floor(log2(amax)) - 2 + 127).
TEST(QuantizeWeights, Mxfp4NearestCodeAndScale) {
  const RoundTrip rt = round_trip(GgmlType::MXFP4, 14);
  for (int64_t b = 0; b < kN / 32; ++b) {
    const uint8_t* blk = rt.q.data() + b * layout::mxfp4_bytes;
    const float d = e8m0_half(blk[0]);
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(rt.x[b * 32 + j]));
    double err = 0, err_ggml = 0;
    const float d_ggml = amax > 0 ? e8m0_half(static_cast<uint8_t>(std::floor(std::log2(amax)) - 2 + 127)) : d;
    for (int j = 0; j < 32; ++j) {
      const float x = rt.x[b * 32 + j], y = rt.y[b * 32 + j];
      float best = INFINITY, best_ggml = INFINITY;
      for (int8_t v : kMxfp4Values) {
        best = std::min(best, std::fabs(x - d * v));
        best_ggml = std::min(best_ggml, std::fabs(x - d_ggml * v));
      }
      ASSERT_EQ(std::fabs(x - y), best) << b << " " << j;
      err += double(best) * best;
      err_ggml += double(best_ggml) * best_ggml;
    }
    ASSERT_LE(err, err_ggml * (1 + 1e-6)) << b;
  }
}

TEST(QuantizeWeights, FloatFormats) {
  std::mt19937 rng(15);
  const auto x = test::gaussian(1000, rng);
  std::vector<uint8_t> q(4000);
  std::vector<float> y(1000);
  for (auto [t, rel] : {std::pair{GgmlType::F32, 0.0}, {GgmlType::F16, 0x1p-11}, {GgmlType::BF16, 0x1p-8}}) {
    quantize_weights(t, x.data(), q.data(), 1000);
    dequantize_ref(t, q.data(), y.data(), 1000);
    for (int i = 0; i < 1000; ++i) ASSERT_LE(std::fabs(x[i] - y[i]), rel * std::fabs(x[i]) + 1e-7) << type_name(t);
  }
}

TEST(QuantizeWeights, Deterministic) {
  for (GgmlType t : {GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K})
    EXPECT_EQ(round_trip(t, 16).q, round_trip(t, 16).q) << type_name(t);
}

TEST(QuantizeWeights, RejectsUnsupportedAndPartialBlocks) {
  std::vector<float> x(256);
  std::vector<uint8_t> q(1024);
  EXPECT_FALSE(can_quantize_weights(GgmlType::Q2_K));
  EXPECT_TRUE(can_quantize_weights(GgmlType::MXFP4));
  EXPECT_THROW(quantize_weights(GgmlType::Q2_K, x.data(), q.data(), 256), Error);
  EXPECT_THROW(quantize_weights(GgmlType::Q8_0, x.data(), q.data(), 33), Error);
}

}  // namespace
}  // namespace ts::quant
