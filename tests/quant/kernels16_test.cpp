// int16 activations (the default path) and their 8-bit codes: quantization bounds, every kernel table
// (and its 8-bit kernels) against the scalar definition bit for bit (for one token, a few tokens and
// panel-sized batches, odd row counts, row sub-ranges and unaligned strides), and the scalar
// definition against the exact float64 product.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <tuple>

#include "quant/act16.h"
#include "quant/kernels.h"
#include "quant_test_util.h"
#include "util/error.h"

namespace ts::quant {
namespace {

std::vector<GgmlType> act16_types() {
  std::vector<GgmlType> out;
  for (GgmlType t : test::dot_types())
    if (type_info(t).block_elems > 1) out.push_back(t);
  return out;
}

class Act16Codes : public ::testing::TestWithParam<ActCodes> {};

TEST_P(Act16Codes, RoundTripWithinHalfAStep) {
  const ActCodes codes = GetParam();
  const int32_t top = codes == ActCodes::int8 ? 127 : 32767;
  std::mt19937 rng(3);
  const int64_t n = 256;
  auto x = test::gaussian(n, rng, 5.0f);
  std::fill(x.begin() + 64, x.begin() + 96, 0.0f);  // a block of zeros
  x[130] = 1e4f;                                    // an outlier only coarsens its own block
  std::vector<uint8_t> buf(act16_bytes(n));
  EXPECT_EQ(buf.size() % 64, 0u);
  EXPECT_GE(buf.size(), size_t(n) * 2 + size_t(n / 32) * 8);
  quantize_act16(x.data(), buf.data(), n, codes);
  const Act16Row a = act16_row(buf.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    int32_t sum = 0, qmax = 0;
    for (int j = 0; j < 32; ++j) {
      const int64_t i = b * 32 + j;
      amax = std::max(amax, std::fabs(x[i]));
      EXPECT_LE(std::fabs(double(x[i]) - double(a.d[b]) * a.q[i]), 0.5001 * a.d[b]) << i;
      sum += a.q[i];
      qmax = std::max(qmax, std::abs(int32_t(a.q[i])));
    }
    EXPECT_EQ(a.d[b], amax / float(top));
    EXPECT_EQ(a.s[b], a.d[b] * float(sum));
    EXPECT_EQ(qmax, amax == 0 ? 0 : top) << "the largest value uses the whole range";
  }
  EXPECT_EQ(a.d[2], 0.0f);
  x[7] = NAN;  // a non-finite input makes its block NaN rather than garbage
  quantize_act16(x.data(), buf.data(), n, codes);
  EXPECT_TRUE(std::isnan(act16_row(buf.data(), n).d[0]));
  EXPECT_THROW(quantize_act16(x.data(), buf.data(), 40), Error);
}

// Every table's quantizer writes the bytes of the scalar definition, including the edge cases.
TEST_P(Act16Codes, VectorQuantizersMatchTheDefinition) {
  const ActCodes codes = GetParam();
  std::mt19937 rng(4);
  const int64_t n = 512;
  auto x = test::gaussian(n, rng, 2.0f);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
  x[70] = -0.0f;
  x[100] = INFINITY;
  x[140] = NAN;
  x[200] = 3e38f;
  for (int i = 0; i < 32; ++i) x[256 + i] = 0.5f * static_cast<float>(i - 16);  // exact ties
  std::vector<uint8_t> ref(act16_bytes(n)), got(act16_bytes(n));
  auto fields = [&](std::vector<uint8_t>& buf) {
    auto* d = reinterpret_cast<float*>(buf.data() + 2 * n);
    return std::make_tuple(reinterpret_cast<int16_t*>(buf.data()), d, d + n / 32, reinterpret_cast<int32_t*>(d + n / 16));
  };
  {
    auto [q, d, s, sum] = fields(ref);
    quantize_act16_ref(x.data(), n / 32, max_code(codes), q, d, s, sum);
  }
  for (Isa isa : test::supported_isas()) {
    const Act16Fn f = kernels_for(isa).quantize16;
    if (!f) continue;
    SCOPED_TRACE(isa_name(isa));
    std::fill(got.begin(), got.end(), 0xAB);
    auto [q, d, s, sum] = fields(got);
    f(x.data(), n / 32, max_code(codes), q, d, s, sum);
    EXPECT_EQ(0, std::memcmp(ref.data(), got.data(), size_t(n) * 2 + size_t(n / 32) * 12));
  }
  // Block by block (as a producer of 32 values at a time writes it) gives the same row.
  std::fill(got.begin(), got.end(), 0xAB);
  for (int64_t b = n / 32 - 1; b >= 0; --b) quantize_act16_block(x.data() + 32 * b, got.data(), n, b, codes);
  std::vector<uint8_t> whole(act16_bytes(n));
  quantize_act16(x.data(), whole.data(), n, codes);
  EXPECT_EQ(0, std::memcmp(whole.data(), got.data(), size_t(n) * 2 + size_t(n / 32) * 12));
}

INSTANTIATE_TEST_SUITE_P(Both, Act16Codes, ::testing::Values(ActCodes::int16, ActCodes::int8),
                         [](const auto& info) { return std::string(info.param == ActCodes::int8 ? "int8" : "int16"); });

struct Problem {
  GgmlType type;
  int64_t rows, k, n_tok;
  size_t ws, xs;
  ActCodes codes;
  std::vector<uint8_t> W, X;
  std::vector<float> x;
};

Problem make_problem(GgmlType t, int64_t rows, int64_t k, int64_t n_tok, uint32_t seed, ActCodes codes = ActCodes::int16) {
  std::mt19937 rng(seed);
  Problem p{t, rows, k, n_tok, row_bytes(t, k) + 3, act16_bytes(k) + 64, codes, {}, {}, {}};
  p.W.resize(p.ws * rows);
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = test::random_weights(t, k, rng);
    std::copy(row.begin(), row.end(), p.W.begin() + r * p.ws);
  }
  p.x = test::gaussian(k * n_tok, rng);
  p.X.resize(p.xs * n_tok);
  for (int64_t i = 0; i < n_tok; ++i) quantize_act16(p.x.data() + i * k, p.X.data() + i * p.xs, k, codes);
  return p;
}

// With 8-bit codes, the table's 8-bit kernel where it has one.
std::vector<float> run(const KernelTable& kt, const Problem& p, int64_t r0, int64_t rows, int64_t n_tok) {
  std::vector<float> Y(static_cast<size_t>(n_tok * rows), NAN);
  MatmulFn f = kt.matmul16[type_index(p.type)];
  if (p.codes == ActCodes::int8 && kt.matmul8[type_index(p.type)]) f = kt.matmul8[type_index(p.type)];
  f(p.W.data() + r0 * p.ws, p.ws, rows, p.k, p.X.data(), p.xs, n_tok, Y.data(), static_cast<size_t>(rows));
  return Y;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << what << " element " << i;
}

void check(const Problem& p) {
  const auto ref = run(kernels_for(Isa::scalar), p, 0, p.rows, p.n_tok);
  // The definition is close to the exact product of the weights with the *unrounded* activations:
  // the activation rounding moves each term by at most |w| * d / 2, plus float rounding per group.
  std::vector<float> wf(static_cast<size_t>(p.k));
  for (int64_t r = 0; r < p.rows; ++r) {
    dequantize_ref(p.type, p.W.data() + r * p.ws, wf.data(), p.k);
    for (int64_t t = 0; t < p.n_tok; ++t) {
      const Act16Row a = act16_row(p.X.data() + t * p.xs, p.k);
      double exact = 0, bound = 0, mag = 0;
      for (int64_t i = 0; i < p.k; ++i) {
        exact += double(wf[i]) * p.x[t * p.k + i];
        bound += std::fabs(double(wf[i])) * a.d[i / 32] * 0.5;
        mag += std::fabs(double(wf[i]) * p.x[t * p.k + i]);
      }
      const double tol = bound * 1.001 + 4.0 * double(p.k / 16 + 4) * 0x1p-24 * (mag + bound) + 1e-30;
      ASSERT_NEAR(ref[t * p.rows + r], exact, tol) << type_name(p.type) << " t=" << t << " r=" << r;
    }
  }
  for (Isa isa : test::supported_isas()) {
    if (isa == Isa::scalar) continue;
    SCOPED_TRACE(isa_name(isa));
    const KernelTable& kt = kernels_for(isa);
    expect_same_bits(run(kt, p, 0, p.rows, p.n_tok), ref, "all rows");
    if (p.rows > 5) {  // a sub-range of rows (not starting on a multiple of 8) gives the same bits
      const auto sub = run(kt, p, 3, p.rows - 5, p.n_tok);
      for (int64_t t = 0; t < p.n_tok; ++t)
        for (int64_t r = 0; r < p.rows - 5; ++r)
          ASSERT_EQ(std::bit_cast<uint32_t>(sub[t * (p.rows - 5) + r]), std::bit_cast<uint32_t>(ref[t * p.rows + r + 3]));
    }
  }
}

class Kernels16 : public ::testing::TestWithParam<GgmlType> {
 protected:
  int64_t block() const { return std::max<int64_t>(32, type_info(GetParam()).block_elems); }
};

// Each problem with int16 codes and with 8-bit ones.
void check_both(GgmlType t, int64_t rows, int64_t k, int64_t n_tok, uint32_t seed) {
  for (ActCodes codes : {ActCodes::int16, ActCodes::int8}) {
    SCOPED_TRACE(codes == ActCodes::int8 ? "int8 codes" : "int16 codes");
    check(make_problem(t, rows, k, n_tok, seed, codes));
  }
}

TEST_P(Kernels16, OneToken) { check_both(GetParam(), 19, 2 * block(), 1, 11); }
TEST_P(Kernels16, FewTokens) { check_both(GetParam(), 9, block(), 5, 12); }
TEST_P(Kernels16, PanelTokens) { check_both(GetParam(), 13, 2 * block(), 11, 13); }
TEST_P(Kernels16, ManyRowsAndTokens) { check_both(GetParam(), 40, block() * (block() == 32 ? 8 : 1), 23, 14); }
TEST_P(Kernels16, OneRow) { check_both(GetParam(), 1, block(), 7, 15); }

// The AVX-512 VNNI table multiplies 8-bit codes with its own kernels for every format with groups of
// 32 (Q6_K's groups of 16 take the int16 kernels).
TEST_P(Kernels16, VnniHasEightBitKernels) {
  if (!isa_supported(Isa::avx512vnni)) GTEST_SKIP() << "no AVX-512 VNNI here";
  const bool groups32 = GetParam() != GgmlType::Q6_K;
  EXPECT_EQ(kernels_for(Isa::avx512vnni).matmul8[type_index(GetParam())] != nullptr, groups32);
}

TEST_P(Kernels16, PublicEntryPointUsesTheActiveTable) {
  const Problem p = make_problem(GetParam(), 9, block(), 7, 16);
  ASSERT_TRUE(has_act16_kernel(p.type));
  std::vector<float> Y(static_cast<size_t>(9 * 7));
  matmul16(p.type, p.W.data(), p.ws, 9, p.k, p.X.data(), p.xs, 7, Y.data(), 9);
  expect_same_bits(Y, run(kernels_for(Isa::scalar), p, 0, 9, 7), "public entry");
  const Problem p8 = make_problem(GetParam(), 9, block(), 7, 16, ActCodes::int8);
  matmul16(p8.type, p8.W.data(), p8.ws, 9, p8.k, p8.X.data(), p8.xs, 7, Y.data(), 9, ActCodes::int8);
  expect_same_bits(Y, run(kernels_for(Isa::scalar), p8, 0, 9, 7), "public entry, 8-bit codes");
  EXPECT_THROW(matmul16(p.type, p.W.data(), p.ws, 9, p.k + 16, p.X.data(), p.xs, 1, Y.data(), 9), Error);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, Kernels16, ::testing::ValuesIn(act16_types()),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// MXFP4 scales 2^(e-128): e = 0 and 1 are subnormal floats, computed apart in the vector kernels.
TEST(Kernels16, Mxfp4SubnormalScalesGiveTheScalarBits) {
  for (int n_tok : {1, 3, 9, 17}) {
    Problem p = make_problem(GgmlType::MXFP4, 19, 64, n_tok, 17, n_tok > 9 ? ActCodes::int8 : ActCodes::int16);
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t b = 0; b < 2; ++b) p.W[r * p.ws + b * 17] = static_cast<uint8_t>((r + b) % 4);  // e = 0..3
    const auto ref = run(kernels_for(Isa::scalar), p, 0, p.rows, p.n_tok);
    EXPECT_TRUE(std::any_of(ref.begin(), ref.end(), [](float v) { return v != 0; }));
    for (Isa isa : test::supported_isas()) {
      SCOPED_TRACE(isa_name(isa));
      expect_same_bits(run(kernels_for(isa), p, 0, p.rows, p.n_tok), ref, "subnormal scales");
    }
  }
}

TEST(Kernels16, FloatWeightsHaveNoInt16Kernel) {
  EXPECT_FALSE(has_act16_kernel(GgmlType::F32));
  EXPECT_FALSE(has_act16_kernel(GgmlType::BF16));
  EXPECT_FALSE(has_act16_kernel(GgmlType::Q2_K));
  float y = 0;
  const uint8_t w[256] = {};
  EXPECT_THROW(matmul16(GgmlType::F16, w, 64, 1, 32, w, 64, 1, &y, 1), Error);
}

}  // namespace
}  // namespace ts::quant
