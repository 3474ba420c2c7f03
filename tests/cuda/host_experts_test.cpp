// The host's replay of the CUDA backend's expert products (backend/cuda/host_experts.h) and the
// IEEE-only e^x of its gated activations (glu.h), on the host: e^x within 1 ulp, the experts within
// the 16-bit activations' error of the float64 definition, and the same bytes for any thread count,
// any grouping of jobs and every instruction set's path as the scalar definition's. That they are
// the device's bytes is checked on a GPU (ops_test.cpp, ExpertsOnTheHostGiveTheDevicesBytes). Needs
// no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cuda/glu.h"
#include "quant/kernels.h"
#include "util/cpu_features.h"
#ifdef TURBOSPARK_HAVE_CUDA
#include "backend/cuda/host_experts.h"
#endif

namespace ts {
namespace {

TEST(HostExperts, ExpIsWithinOneUlpWhereTheResultIsNormal) {
  double worst = 0;
  for (float x = -87.0f; x < 88.7f; x = std::nextafter(x + std::fabs(x) * 1e-4f + 1e-6f, 100.0f)) {
    const double want = std::exp(static_cast<double>(x));
    const float got = gpu::exp_ieee(x), wf = static_cast<float>(want);
    const double ulp = std::nextafter(wf, INFINITY) - wf;
    worst = std::max(worst, std::fabs(got - want) / ulp);
  }
  EXPECT_LE(worst, 1.0);
  EXPECT_TRUE(std::isnan(gpu::exp_ieee(NAN)));
  EXPECT_EQ(gpu::exp_ieee(INFINITY), INFINITY);
  EXPECT_EQ(gpu::exp_ieee(-INFINITY), 0.0f);
  EXPECT_EQ(gpu::exp_ieee(0.0f), 1.0f);
  EXPECT_GT(gpu::exp_ieee(-100.0f), 0.0f);  // subnormal results are computed, not flushed
}

#ifdef TURBOSPARK_HAVE_CUDA
// One MXFP4 expert: the file's rows (for the reference) and the device layout on the host.
struct Expert {
  std::vector<uint8_t> file[3], packed[3];
  std::vector<float> bias[3];
  ExpertWeights w;
};

Expert make_expert(int64_t d, int64_t ff, bool biases, std::mt19937& rng) {
  Expert e;
  std::normal_distribution<float> g(0.0f, 0.1f);
  const int64_t rows[3] = {ff, ff, d}, cols[3] = {d, d, ff};
  Mat* mats[3] = {&e.w.gate, &e.w.up, &e.w.down};
  const float** b[3] = {&e.w.gate_bias, &e.w.up_bias, &e.w.down_bias};
  for (int p = 0; p < 3; ++p) {
    const uint64_t rb = ts::row_bytes(GgmlType::MXFP4, cols[p]);
    const gpu::RowLayout L = gpu::row_layout(GgmlType::MXFP4, cols[p]);
    e.file[p].resize(rows[p] * rb);
    e.packed[p].resize(rows[p] * L.stride);
    for (int64_t r = 0; r < rows[p]; ++r) {
      std::vector<float> x(cols[p]);
      for (float& v : x) v = g(rng);
      quant::quantize_weights(GgmlType::MXFP4, x.data(), e.file[p].data() + r * rb, cols[p]);
      gpu::repack_row(GgmlType::MXFP4, e.file[p].data() + r * rb, e.packed[p].data() + r * L.stride, cols[p]);
    }
    *mats[p] = Mat{GgmlType::MXFP4, e.packed[p].data(), rows[p], cols[p], L.stride};
    if (biases) {
      for (int64_t i = 0; i < rows[p]; ++i) e.bias[p].push_back(g(rng));
      *b[p] = e.bias[p].data();
    }
  }
  e.w.on_host = true;
  return e;
}

// The expert's FFN in float64 from the file's rows.
std::vector<double> reference(const Expert& e, const std::vector<float>& x, Activation act) {
  const int64_t d = e.w.gate.cols, ff = e.w.gate.rows;
  const auto dot = [](int p, const Expert& ex, int64_t r, int64_t cols, const auto& v) {
    std::vector<float> w(cols);
    quant::dequantize_ref(GgmlType::MXFP4, ex.file[p].data() + r * ts::row_bytes(GgmlType::MXFP4, cols), w.data(), cols);
    double s = 0;
    for (int64_t i = 0; i < cols; ++i) s += static_cast<double>(w[i]) * v[i];
    return s + (ex.bias[p].empty() ? 0.0 : ex.bias[p][r]);
  };
  std::vector<double> a(ff), out(d);
  for (int64_t j = 0; j < ff; ++j) {
    double g = dot(0, e, j, d, x), u = dot(1, e, j, d, x);
    if (act == Activation::ClampedSwiGLU) {
      g = std::min(g, 7.0);
      u = std::clamp(u, -7.0, 7.0) + 1.0;
      a[j] = g / (1.0 + std::exp(-1.702 * g)) * u;
    } else {
      a[j] = g / (1.0 + std::exp(-g)) * u;
    }
  }
  for (int64_t i = 0; i < d; ++i) out[i] = dot(2, e, i, ff, a);
  return out;
}

TEST(HostExperts, MatchTheDefinitionAndGiveTheSameBytesForAnyThreadsAndGrouping) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  struct Case {
    int64_t d, ff;
    Activation act;
    bool biases;
  };
  // 320 and 192 columns: 10 and 6 units per row, tails of the 8-unit groups; 2880: gpt-oss 20b's.
  for (const Case c : {Case{320, 192, Activation::SwiGLU, false}, Case{2880, 2880, Activation::ClampedSwiGLU, true}}) {
    SCOPED_TRACE("d " + std::to_string(c.d));
    std::vector<Expert> experts;
    for (int i = 0; i < 3; ++i) experts.push_back(make_expert(c.d, c.ff, c.biases, rng));
    ASSERT_TRUE(gpu::HostExperts::supports(experts[0].w, c.act));
    EXPECT_FALSE(gpu::HostExperts::supports(experts[0].w, Activation::GeluTanhGLU));
    std::vector<std::vector<float>> xs(3, std::vector<float>(c.d));
    for (auto& x : xs)
      for (float& v : x) v = g(rng);
    // All three experts as one call on 3 threads, then each alone on 1 thread, on every path this CPU
    // has: the same bytes as the scalar definition's.
    std::vector<gpu::HostExperts::Path> paths{gpu::HostExperts::Path::Scalar};
    if (cpu_features().avx2) paths.push_back(gpu::HostExperts::Path::Avx2);
    if (cpu_features().avx512_vnni) paths.push_back(gpu::HostExperts::Path::Vnni);
    std::vector<std::vector<float>> scalar;
    for (const gpu::HostExperts::Path path : paths) {
      SCOPED_TRACE("path " + std::to_string(static_cast<int>(path)));
      std::vector<std::vector<float>> together(3, std::vector<float>(c.d, NAN)), alone(3, std::vector<float>(c.d, NAN));
      gpu::HostExperts three(3, path), one(1, path);
      std::vector<gpu::HostExperts::Job> jobs;
      for (int i = 0; i < 3; ++i) jobs.push_back({&experts[i].w, xs[i].data(), together[i].data()});
      three.run(jobs, c.act);
      for (int i = 0; i < 3; ++i) {
        const gpu::HostExperts::Job j{&experts[i].w, xs[i].data(), alone[i].data()};
        one.run({&j, 1}, c.act);
        EXPECT_EQ(std::memcmp(together[i].data(), alone[i].data(), c.d * sizeof(float)), 0) << "expert " << i;
        if (!scalar.empty()) {
          EXPECT_EQ(std::memcmp(scalar[i].data(), alone[i].data(), c.d * sizeof(float)), 0) << "expert " << i;
        }
      }
      if (scalar.empty()) scalar = alone;
    }
    for (int i = 0; i < 3; ++i) {
      const std::vector<double> want = reference(experts[i], xs[i], c.act);
      double num = 0, den = 0;
      for (int64_t k = 0; k < c.d; ++k) {
        ASSERT_TRUE(std::isfinite(scalar[i][k])) << "value " << k;
        num += (scalar[i][k] - want[k]) * (scalar[i][k] - want[k]);
        den += want[k] * want[k];
      }
      EXPECT_LT(std::sqrt(num / den), 8e-5) << "expert " << i;  // measured 4.0e-5 .. 5.2e-5
    }
  }
}
#endif

}  // namespace
}  // namespace ts
