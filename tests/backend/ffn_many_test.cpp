// Backend::ffn_many on the CPU: several FFNs at once (a step's routed experts, side by side) give
// exactly the bytes of one ffn call each, whatever the thread count; and it declines (doing nothing)
// where it has nothing better than those calls.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "quant/kernels.h"

namespace ts {
namespace {

struct Weights {
  std::vector<uint8_t> gate, up, down;
  std::vector<float> gate_bias, up_bias, down_bias;
  Mat g, u, d;
};

Weights make(GgmlType t, int64_t d_model, int64_t n_ff, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 0.05f);
  auto quantized = [&](int64_t rows, int64_t cols, std::vector<uint8_t>& bytes) {
    bytes.resize(ts::row_bytes(t, cols) * rows);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = nd(rng);
      quant::quantize_weights(t, row.data(), bytes.data() + r * ts::row_bytes(t, cols), cols);
    }
    return Mat{t, bytes.data(), rows, cols, ts::row_bytes(t, cols)};
  };
  Weights w;
  w.g = quantized(n_ff, d_model, w.gate);
  w.u = quantized(n_ff, d_model, w.up);
  w.d = quantized(d_model, n_ff, w.down);
  for (auto* b : {&w.gate_bias, &w.up_bias}) b->resize(n_ff);
  w.down_bias.resize(d_model);
  for (auto* b : {&w.gate_bias, &w.up_bias, &w.down_bias})
    for (float& v : *b) v = nd(rng);
  return w;
}

FfnWeights view(const Weights& w, Activation act) {
  return FfnWeights{&w.g, &w.u, &w.d, w.gate_bias.data(), w.up_bias.data(), w.down_bias.data(), act};
}

std::vector<float> host(Backend& be, Act a) {
  std::vector<float> v(a.n * a.dim);
  be.to_host(a, v.data());
  return v;
}

TEST(FfnMany, GivesTheBytesOfOneCallPerFfn) {
  const int64_t d_model = 256, n_ff = 512;
  for (GgmlType t : {GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::Q4_K})
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(type_name(t)) + ", threads " + std::to_string(threads));
      std::unique_ptr<Backend> be = make_cpu_backend(threads, Precision::Int16);
      std::mt19937 rng(11);
      std::vector<Weights> ws;
      for (int e = 0; e < 5; ++e) ws.push_back(make(t, d_model, n_ff, rng));
      const int64_t rows[] = {1, 3, 2, 1, 16};  // tokens per FFN, as a step's experts have
      std::vector<FfnJob> jobs;
      std::vector<Act> alone;
      std::normal_distribution<float> nd(0.0f, 1.0f);
      for (size_t e = 0; e < ws.size(); ++e) {
        std::vector<float> x(rows[e] * d_model);
        for (float& v : x) v = nd(rng);
        Act in = be->alloc(rows[e], d_model);
        std::memcpy(in.data, x.data(), x.size() * sizeof(float));  // CPU activations are host memory
        const Activation act = e % 2 ? Activation::ClampedSwiGLU : Activation::SwiGLU;
        jobs.push_back(FfnJob{in, view(ws[e], act), be->alloc(rows[e], d_model)});
        alone.push_back(be->alloc(rows[e], d_model));
        be->ffn(in, jobs.back().w, alone.back());
      }
      ASSERT_TRUE(be->ffn_many(jobs));
      for (size_t e = 0; e < jobs.size(); ++e) {
        const std::vector<float> a = host(*be, alone[e]), b = host(*be, jobs[e].out);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "FFN " << e;
      }
      // Fewer FFNs than threads, or the exact path: declined.
      if (threads > 1) {
        EXPECT_FALSE(be->ffn_many(std::span(jobs).first(1)));
      }
      for (FfnJob& j : jobs) be->release(j.x), be->release(j.out);
      for (Act& a : alone) be->release(a);
    }
  std::unique_ptr<Backend> exact = make_cpu_backend(1, Precision::Exact);
  std::mt19937 rng(12);
  const Weights w = make(GgmlType::Q8_0, 64, 64, rng);
  Act x = exact->alloc(1, 64), y = exact->alloc(1, 64);
  const FfnJob j{x, view(w, Activation::SwiGLU), y};
  EXPECT_FALSE(exact->ffn_many(std::span(&j, 1)));
  exact->release(x);
  exact->release(y);
}

}  // namespace
}  // namespace ts
