// Every kernel table this machine can run, for the float weight types (F32, F16, BF16, with f32
// activations; quantized weights take the int16 rows of kernels16_test.cpp): products against the
// exact float64 value and against the scalar table, one token against many bit for bit,
// independence from the row range, and awkward shapes (one row, rows and tokens that are not
// multiples of the tile, unaligned strides, rows with a partial vector).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "quant/kernels.h"
#include "util/error.h"
#include "quant_test_util.h"

namespace ts::quant {
namespace {

struct Problem {
  GgmlType type;
  int64_t rows, k, n_tok;
  size_t row_stride, x_stride;
  std::vector<uint8_t> W, X;  // X: the activations as f32 rows, x_stride bytes apart
};

// Strides are padded by a few bytes so rows and activation rows start at unaligned addresses.
Problem make_problem(GgmlType t, int64_t rows, int64_t k, int64_t n_tok, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p{t, rows, k, n_tok, row_bytes(t, k) + 5, static_cast<size_t>(k) * 4 + 7, {}, {}};
  p.W.resize(p.row_stride * rows);
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = test::random_weights(t, k, rng);
    std::copy(row.begin(), row.end(), p.W.begin() + r * p.row_stride);
  }
  const auto x = test::gaussian(k * n_tok, rng);
  p.X.resize(p.x_stride * n_tok);
  for (int64_t i = 0; i < n_tok; ++i) std::memcpy(p.X.data() + i * p.x_stride, x.data() + i * k, k * sizeof(float));
  return p;
}

std::vector<float> row_of(const Problem& p, int64_t t) {
  std::vector<float> x(static_cast<size_t>(p.k));
  std::memcpy(x.data(), p.X.data() + t * p.x_stride, x.size() * sizeof(float));
  return x;
}

std::vector<float> run(const KernelTable& kt, const Problem& p, int64_t r0, int64_t rows, int64_t n_tok) {
  std::vector<float> Y(static_cast<size_t>(n_tok * rows), NAN);
  kt.matmul[type_index(p.type)](p.W.data() + r0 * p.row_stride, p.row_stride, rows, p.k, p.X.data(), p.x_stride,
                                n_tok, Y.data(), static_cast<size_t>(rows));
  return Y;
}

// Rounding bound: each of the k sequential float additions contributes at most one unit roundoff of
// the magnitude.
double tolerance(int64_t k, double magnitude) { return 2.0 * static_cast<double>(k + 16) * 0x1p-24 * magnitude; }

void check_problem(const Problem& p) {
  const KernelTable& scalar = kernels_for(Isa::scalar);
  const auto ref = run(scalar, p, 0, p.rows, p.n_tok);
  for (Isa isa : test::supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const KernelTable& kt = kernels_for(isa);
    const auto Y = run(kt, p, 0, p.rows, p.n_tok);
    for (int64_t t = 0; t < p.n_tok; ++t) {
      // one token alone gives the matmul element bit for bit
      std::vector<float> y(static_cast<size_t>(p.rows));
      kt.matmul[type_index(p.type)](p.W.data(), p.row_stride, p.rows, p.k, p.X.data() + t * p.x_stride, 0, 1,
                                    y.data(), 0);
      const std::vector<float> x = row_of(p, t);
      for (int64_t r = 0; r < p.rows; ++r) {
        const float got = Y[t * p.rows + r];
        ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(y[r])) << "t=" << t << " r=" << r;
        const auto e = test::exact_dot(p.type, p.W.data() + r * p.row_stride, x.data(), p.k);
        const double tol = tolerance(p.k, e.magnitude) + 1e-30;
        ASSERT_NEAR(got, e.value, tol) << "t=" << t << " r=" << r;
        ASSERT_NEAR(got, ref[t * p.rows + r], 2 * tol) << "t=" << t << " r=" << r;
      }
    }
    // a sub-range of rows gives the same bits as the full call
    if (p.rows > 4) {
      const auto sub = run(kt, p, 3, p.rows - 4, p.n_tok);
      for (int64_t t = 0; t < p.n_tok; ++t)
        for (int64_t r = 0; r < p.rows - 4; ++r)
          ASSERT_EQ(std::bit_cast<uint32_t>(sub[t * (p.rows - 4) + r]), std::bit_cast<uint32_t>(Y[t * p.rows + r + 3]));
    }
  }
}

class Kernels : public ::testing::TestWithParam<GgmlType> {};

TEST_P(Kernels, TileShapedProblem) { check_problem(make_problem(GetParam(), 13, 96, 7, 1)); }
TEST_P(Kernels, OneRow) { check_problem(make_problem(GetParam(), 1, 8, 5, 2)); }
TEST_P(Kernels, LongRows) { check_problem(make_problem(GetParam(), 6, 4096, 9, 3)); }
TEST_P(Kernels, ManyTokens) { check_problem(make_problem(GetParam(), 9, 128, 66, 4)); }

TEST_P(Kernels, PublicEntryPointUsesTheActiveTable) {
  const Problem p = make_problem(GetParam(), 5, 32, 3, 5);
  std::vector<float> Y(15), y(5);
  matmul(p.type, p.W.data(), p.row_stride, 5, p.k, p.X.data(), p.x_stride, 3, Y.data(), 5);
  matmul(p.type, p.W.data(), p.row_stride, 5, p.k, p.X.data() + 2 * p.x_stride, 0, 1, y.data(), 0);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(std::bit_cast<uint32_t>(Y[10 + r]), std::bit_cast<uint32_t>(y[r]));
  EXPECT_EQ(run(active_kernels(), p, 0, 5, 3), Y);
  EXPECT_THROW(matmul(p.type, p.W.data(), p.row_stride, 5, 0, p.X.data(), p.x_stride, 1, y.data(), 0), Error);
}

INSTANTIATE_TEST_SUITE_P(FloatFormats, Kernels, ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// Float rows whose length is not a multiple of any vector width end in a zero-padded step.
TEST(KernelsFloat, OddLengths) {
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
    for (int64_t k : {1, 7, 13, 31, 77}) {
      SCOPED_TRACE(k);
      check_problem(make_problem(t, 6, k, 5, static_cast<uint32_t>(k)));
    }
}

// Quantized weights have no float-activation kernel: the backend multiplies them with matmul16.
TEST(Kernels, QuantizedOrUnsupportedTypesAreAnError) {
  float y = 0;
  const uint8_t w[1024] = {};
  EXPECT_THROW(matmul(GgmlType::Q2_K, w, 84, 1, 256, w, 0, 1, &y, 0), Error);
  EXPECT_THROW(matmul(GgmlType::Q8_0, w, 34, 1, 32, w, 0, 1, &y, 0), Error);
}

}  // namespace
}  // namespace ts::quant
