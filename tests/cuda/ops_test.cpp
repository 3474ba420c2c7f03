// Every operation of the CUDA backend against the CPU backend (the definition) on random inputs:
// products of every weight type on the matvec and GEMM paths, normalised inputs and the gated FFN,
// norms and element-wise operations, attention over several sequences in prefill and decode shapes
// with every RoPE variant, windows and sinks, the routed-expert operation against the MoE layer's
// loop, experts computed on the host (the device's bytes), and asynchronous copies.
// Tolerances follow the arithmetic: f32 activations (the F32/F16/BF16 matvecs) agree to ~1e-5,
// 16-bit integer activations (the quantized formats' matvecs) to ~2e-5, the half precision paths
// (GEMM, KV cache) to ~1e-3. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <span>
#include <tuple>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cuda/require_cuda.h"
#include "moe/moe_layer.h"
#include "quant/kernels.h"

namespace ts {
namespace {

std::vector<float> gaussian(size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::normal_distribution<float> g(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = g(rng);
  return v;
}

double rel_l2(const std::vector<float>& ref, const std::vector<float>& got) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (static_cast<double>(ref[i]) - got[i]) * (static_cast<double>(ref[i]) - got[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// One input or output of both backends.
struct Twin {
  Act cpu, gpu;
};

class Ops : public testing::Test {
 protected:
  void SetUp() override {
    TS_REQUIRE_CUDA();
    cpu_ = make_cpu_backend(2, Precision::Exact);  // the definition: exact f32 activations
    gpu_ = make_backend("cuda", 1);
  }
  void TearDown() override {
    for (Twin& t : twins_) {
      cpu_->release(t.cpu);
      gpu_->release(t.gpu);
    }
  }
  Twin twin(const std::vector<float>& v, int64_t n, int64_t dim) {
    Twin t{cpu_->alloc(n, dim), gpu_->alloc(n, dim)};
    std::copy(v.begin(), v.end(), t.cpu.data);
    gpu_->copy_async(t.gpu.data, v.data(), v.size() * sizeof(float), Queue::Compute);
    gpu_->synchronize();
    twins_.push_back(t);
    return t;
  }
  Twin zeros(int64_t n, int64_t dim) { return twin(std::vector<float>(n * dim, 0.0f), n, dim); }
  std::vector<float> host(Backend& be, Act a) {
    std::vector<float> v(a.n * a.dim);
    be.to_host(a, v.data());
    return v;
  }
  // rel L2 of the GPU result from the CPU's.
  double diff(Twin t) { return rel_l2(host(*cpu_, t.cpu), host(*gpu_, t.gpu)); }
  // A weight matrix of type ty on both backends.
  std::pair<Mat, Mat> weights(GgmlType ty, int64_t rows, int64_t cols, std::mt19937& rng, float sigma = 0.05f) {
    auto& bytes = blobs_.emplace_back(ts::row_bytes(ty, cols) * rows);
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> x = gaussian(cols, rng, sigma);
      quant::quantize_weights(ty, x.data(), bytes.data() + r * ts::row_bytes(ty, cols), cols);
    }
    const Mat host{ty, bytes.data(), rows, cols, ts::row_bytes(ty, cols)};
    return {cpu_->upload(host), gpu_->upload(host)};
  }
  std::pair<const float*, const float*> vec(const std::vector<float>& v) { return {cpu_->upload_f32(v), gpu_->upload_f32(v)}; }
  void step(const Step& s) {
    cpu_->begin_step(s);
    gpu_->begin_step(s);
  }

  std::unique_ptr<Backend> cpu_, gpu_;
  std::vector<Twin> twins_;
  std::deque<std::vector<uint8_t>> blobs_;
  std::deque<std::vector<float>> host_f32_;
};

const GgmlType kTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                           GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

TEST_F(Ops, ProductsOfEveryTypeOnBothPaths) {
  std::mt19937 rng(1);
  for (GgmlType t : kTypes)
    for (int64_t cols : {512, 4352})  // 4352 > one staged chunk of activations
      for (int64_t n : {1, 2, 4, 5, 37}) {
        if (cols > 512 && n > 1) continue;
        SCOPED_TRACE(std::string(type_name(t)) + " cols " + std::to_string(cols) + " rows " + std::to_string(n));
        const auto [wc, wg] = weights(t, 67, cols, rng);
        const Twin x = twin(gaussian(n * cols, rng), n, cols), y = zeros(n, 67);
        cpu_->matmul(wc, x.cpu, y.cpu);
        gpu_->matmul(wg, x.gpu, y.gpu);
        // Exact activations (few rows, F32 weights; F16/BF16 split into two halves) vs halves.
        const bool exact = n <= 4 || t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
        const bool int16 = n <= 4 && t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16;
        EXPECT_LT(diff(y), int16 ? 5e-5 : exact ? 3e-5 : 3e-3);
      }
}

// One token's products have the bytes the same row gets in a batch of four (each row's sums in one
// order whatever shares the call: a sequence decoded beside others keeps its bytes), for Q8_0 and
// MXFP4 rows of one and of two staged chunks and row counts that leave the last warps partial.
TEST_F(Ops, OneTokenProductsHaveTheBytesOfBatchedRows) {
  std::mt19937 rng(9);
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::MXFP4})
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{300, 2880}, {1000, 512}, {20007, 2880}, {333, 4352}, {2050, 8192}}) {
      SCOPED_TRACE(std::string(type_name(t)) + " " + std::to_string(rows) + " x " + std::to_string(cols));
      const auto wg = weights(t, rows, cols, rng).second;
      const std::vector<float> x = gaussian(4 * cols, rng);
      const Twin x4 = twin(x, 4, cols), x1 = twin({x.begin(), x.begin() + cols}, 1, cols);
      const Twin y4 = zeros(4, rows), y1 = zeros(1, rows);
      gpu_->matmul(wg, x4.gpu, y4.gpu);
      gpu_->matmul(wg, x1.gpu, y1.gpu);
      const std::vector<float> batched = host(*gpu_, y4.gpu), alone = host(*gpu_, y1.gpu);
      int64_t differ = 0;
      for (int64_t r = 0; r < rows; ++r) differ += std::memcmp(&batched[r], &alone[r], sizeof(float)) != 0;
      EXPECT_EQ(differ, 0);
    }
}

TEST_F(Ops, SharedProductsWithBiasAndAccumulation) {
  std::mt19937 rng(2);
  for (int64_t n : {1, 3, 9}) {
    SCOPED_TRACE(n);
    const auto [q_c, q_g] = weights(GgmlType::Q8_0, 96, 256, rng);
    const auto [k_c, k_g] = weights(GgmlType::Q8_0, 32, 256, rng);
    const auto [v_c, v_g] = weights(GgmlType::Q6_K, 32, 256, rng);  // another type in the same call
    const auto [b_c, b_g] = vec(gaussian(96, rng));
    const Twin x = twin(gaussian(n * 256, rng), n, 256), q = zeros(n, 96), k = zeros(n, 32);
    const Twin v = twin(gaussian(n * 32, rng), n, 32);
    const MatmulOut oc[] = {{&q_c, q.cpu, b_c}, {&k_c, k.cpu}, {&v_c, v.cpu, nullptr, true}};
    const MatmulOut og[] = {{&q_g, q.gpu, b_g}, {&k_g, k.gpu}, {&v_g, v.gpu, nullptr, true}};
    cpu_->matmul_shared(x.cpu, oc);
    gpu_->matmul_shared(x.gpu, og);
    const double tol = n <= 4 ? 5e-5 : 3e-3;  // 16-bit activations
    EXPECT_LT(diff(q), tol);
    EXPECT_LT(diff(k), tol);
    EXPECT_LT(diff(v), tol);
  }
}

// The input normalised as it is read (InputNorm), and the whole gated FFN with biases.
TEST_F(Ops, NormalisedInputsAndTheGatedFfn) {
  std::mt19937 rng(6);
  const int64_t d = 256, ff = 64;
  const auto [g_c, g_g] = weights(GgmlType::Q8_0, ff, d, rng);
  const auto [u_c, u_g] = weights(GgmlType::MXFP4, ff, d, rng);
  const auto [d_c, d_g] = weights(GgmlType::Q8_0, d, ff, rng);
  const auto [nw_c, nw_g] = vec(gaussian(d, rng));
  const auto [gb_c, gb_g] = vec(gaussian(ff, rng));
  const auto [db_c, db_g] = vec(gaussian(d, rng));
  for (int64_t n : {1, 3, 9}) {
    SCOPED_TRACE(n);
    const double tol = n <= 4 ? 5e-5 : 3e-3;  // 16-bit activations
    const Twin x = twin(gaussian(n * d, rng, 3.0f), n, d), y = zeros(n, ff);
    const MatmulOut oc[] = {{&g_c, y.cpu}}, og[] = {{&g_g, y.gpu}};
    cpu_->matmul_shared(x.cpu, oc, InputNorm{nw_c, 1e-5f});
    gpu_->matmul_shared(x.gpu, og, InputNorm{nw_g, 1e-5f});
    EXPECT_LT(diff(y), tol);
    for (Activation act : {Activation::SwiGLU, Activation::ClampedSwiGLU}) {
      const Twin out = zeros(n, d);
      const FfnWeights fc{&g_c, &u_c, &d_c, gb_c, nullptr, db_c, act}, fg{&g_g, &u_g, &d_g, gb_g, nullptr, db_g, act};
      cpu_->ffn(x.cpu, fc, out.cpu, InputNorm{nw_c, 1e-5f});
      gpu_->ffn(x.gpu, fg, out.gpu, InputNorm{nw_g, 1e-5f});
      EXPECT_LT(diff(out), tol) << static_cast<int>(act);
    }
  }
}

TEST_F(Ops, RowOperations) {
  std::mt19937 rng(3);
  const int64_t n = 6, d = 256;
  const int32_t ids[] = {5, 0, 7, 7, 2, 1};
  const SeqRows seqs[] = {{cpu_->alloc_kv(1, 8, 32), 0, 6, 0}};
  // The same handle number on both: each backend numbers its own caches from 0.
  ASSERT_EQ(gpu_->alloc_kv(1, 8, 32), seqs[0].kv);
  const int32_t out_rows[] = {1, 4};
  step(Step{ids, n, seqs, 1, out_rows, 2});
  const auto [w_c, w_g] = vec(gaussian(d, rng));
  const auto [wh_c, wh_g] = vec(gaussian(32, rng));
  {
    const Twin x = twin(gaussian(n * d, rng, 3.0f), n, d), y = zeros(n, d);
    cpu_->rms_norm(x.cpu, w_c, 1e-5f, d, y.cpu);
    gpu_->rms_norm(x.gpu, w_g, 1e-5f, d, y.gpu);
    EXPECT_LT(diff(y), 1e-6);
    cpu_->rms_norm(x.cpu, wh_c, 1e-6f, 32, x.cpu);  // per head, in place
    gpu_->rms_norm(x.gpu, wh_g, 1e-6f, 32, x.gpu);
    EXPECT_LT(diff(x), 1e-6);
  }
  {
    const Twin a = twin(gaussian(n * d, rng), n, d), b = twin(gaussian(n * d, rng), n, d);
    cpu_->add(a.cpu, b.cpu);
    gpu_->add(a.gpu, b.gpu);
    cpu_->scale(a.cpu, 0.7f);
    gpu_->scale(a.gpu, 0.7f);
    cpu_->add_bias(a.cpu, w_c);
    gpu_->add_bias(a.gpu, w_g);
    EXPECT_EQ(diff(a), 0.0);
  }
  for (Activation act : {Activation::SwiGLU, Activation::GeluTanhGLU, Activation::ClampedSwiGLU}) {
    const Twin g = twin(gaussian(n * d, rng, 4.0f), n, d), u = twin(gaussian(n * d, rng, 4.0f), n, d), o = zeros(n, d);
    cpu_->glu(act, g.cpu, u.cpu, o.cpu);
    gpu_->glu(act, g.gpu, u.gpu, o.gpu);
    EXPECT_LT(diff(o), 1e-6) << static_cast<int>(act);
  }
  {
    const Twin x = twin(gaussian(n * d, rng), n, d), sel = zeros(2, d), tab = zeros(8, d);
    cpu_->select_output_rows(x.cpu, 0, sel.cpu);
    gpu_->select_output_rows(x.gpu, 0, sel.gpu);
    EXPECT_EQ(diff(sel), 0.0);
    const int32_t rows[] = {3, 0, 5};
    cpu_->scatter_rows(x.cpu.first(3), rows, 3, tab.cpu);
    gpu_->scatter_rows(x.gpu.first(3), rows, 3, tab.gpu);
    const Twin back = zeros(3, d);
    cpu_->gather_rows(tab.cpu, rows, 3, back.cpu);
    gpu_->gather_rows(tab.gpu, rows, 3, back.gpu);
    EXPECT_EQ(diff(tab), 0.0);
    EXPECT_EQ(diff(back), 0.0);
    const std::vector<float> wts = gaussian(3 * 2, rng);
    const Twin comb = zeros(3, d);
    cpu_->combine_ranked(x.cpu, wts.data(), 2, comb.cpu);
    gpu_->combine_ranked(x.gpu, wts.data(), 2, comb.gpu);
    EXPECT_LT(diff(comb), 1e-6);
  }
  for (auto mode : {SteerParams::Mode::Add, SteerParams::Mode::Ablate, SteerParams::Mode::Clamp, SteerParams::Mode::Renorm}) {
    const std::vector<float> dir = gaussian(d, rng);
    double norm = 0;
    for (float v : dir) norm += static_cast<double>(v) * v;
    const auto [dc, dg] = vec(dir);
    SteerParams pc{mode, dc, std::sqrt(norm), 0.8f, 0.5f, 0.3f}, pg = pc;
    pg.direction = dg;
    const Twin x = twin(gaussian(n * d, rng), n, d);
    cpu_->steer(x.cpu, pc);
    gpu_->steer(x.gpu, pg);
    EXPECT_LT(diff(x), 1e-6) << static_cast<int>(mode);
  }
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::F16, GgmlType::Q4_K, GgmlType::MXFP4}) {
    const auto [tc, tg] = weights(t, 8, d, rng, 1.0f);
    const Twin e = zeros(n, d);
    cpu_->embed(tc, e.cpu);
    gpu_->embed(tg, e.gpu);
    EXPECT_LT(diff(e), 1e-7) << type_name(t);
  }
}

// Attention over two sequences, in three steps: a prefill of both, one decode row each, a second
// prefill of the first; q and k arrive unrotated (the backend rotates them).
struct AttnCase {
  int64_t head_dim, n_head, n_head_kv, window;
  bool sinks;
  RopeParams rope;
};

class Attention : public Ops, public testing::WithParamInterface<AttnCase> {};

TEST_P(Attention, MatchesTheCpuInPrefillAndDecode) {
  const AttnCase c = GetParam();
  std::mt19937 rng(4);
  const int64_t hd = c.head_dim, qw = c.n_head * hd, kw = c.n_head_kv * hd, n_ctx = 64;
  const KvHandle a = cpu_->alloc_kv(2, n_ctx, kw), b = cpu_->alloc_kv(2, n_ctx, kw);
  ASSERT_EQ(gpu_->alloc_kv(2, n_ctx, kw), a);
  ASSERT_EQ(gpu_->alloc_kv(2, n_ctx, kw), b);
  RopeParams rc = c.rope, rg = c.rope;
  if (c.rope.freq_factors) {
    std::vector<float> ff(c.rope.n_rot / 2);
    for (size_t j = 0; j < ff.size(); ++j) ff[j] = 1.0f + 0.5f * static_cast<float>(j % 3);
    std::tie(rc.freq_factors, rg.freq_factors) = vec(ff);
  }
  AttentionParams pc;
  pc.n_head = c.n_head;
  pc.n_head_kv = c.n_head_kv;
  pc.head_dim = hd;
  pc.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  pc.window = c.window;
  AttentionParams pg = pc;
  if (c.sinks) std::tie(pc.sinks, pg.sinks) = vec(gaussian(c.n_head, rng));
  pc.rope = &rc;
  pg.rope = &rg;
  const std::vector<std::vector<SeqRows>> steps = {
      {{a, 0, 19, 0}, {b, 19, 5, 0}}, {{a, 0, 1, 19}, {b, 1, 1, 5}}, {{b, 0, 1, 6}}, {{a, 0, 3, 20}}};
  for (size_t si = 0; si < steps.size(); ++si) {
    SCOPED_TRACE("step " + std::to_string(si));
    const std::vector<SeqRows>& sq = steps[si];
    int64_t n = 0;
    for (const SeqRows& s : sq) n += s.n;
    std::vector<int32_t> ids(n, 0), outs = {0};
    step(Step{ids.data(), n, sq.data(), static_cast<int64_t>(sq.size()), outs.data(), 1});
    for (int64_t layer = 0; layer < 2; ++layer) {
      const Twin q = twin(gaussian(n * qw, rng), n, qw), k = twin(gaussian(n * kw, rng), n, kw);
      const Twin v = twin(gaussian(n * kw, rng), n, kw), o = zeros(n, qw);
      cpu_->attention(layer, q.cpu, k.cpu, v.cpu, pc, o.cpu);
      gpu_->attention(layer, q.gpu, k.gpu, v.gpu, pg, o.gpu);
      EXPECT_LT(diff(o), 3e-3) << "layer " << layer;
    }
  }
}

RopeParams neox_yarn(int64_t n_rot) {
  RopeParams r;
  r.layout = RopeParams::Layout::NeoX;
  r.n_rot = n_rot;
  r.base = 150000;
  r.yarn_factor = 32;
  r.yarn_orig_ctx = 4096;
  return r;
}
RopeParams adjacent(int64_t n_rot, double linear, bool freqs) {
  RopeParams r;
  r.n_rot = n_rot;
  r.linear_factor = linear;
  r.freq_factors = freqs ? reinterpret_cast<const float*>(1) : nullptr;  // replaced by real factors
  return r;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Attention,
                         testing::Values(AttnCase{64, 8, 1, 0, true, neox_yarn(64)},    // gpt-oss global
                                         AttnCase{64, 16, 2, 8, true, neox_yarn(64)},   // gpt-oss local
                                         AttnCase{32, 4, 2, 0, false, adjacent(32, 1, false)},
                                         AttnCase{128, 8, 2, 0, false, adjacent(128, 4, true)},
                                         AttnCase{256, 4, 1, 16, false, neox_yarn(256)},
                                         AttnCase{128, 6, 3, 0, false, adjacent(64, 1, false)}));  // partial rotation

// A store over vectors of experts: every expert resident (the MoE layer may run them as one
// operation), or moving (run in waves), with the experts marked in `on_host` handed out where they
// lie in host memory after the others, as the streamed store does.
class VectorStore final : public ExpertStore {
 public:
  explicit VectorStore(std::vector<ExpertView> v) : dev_(std::move(v)), on_host_(dev_.size(), false), resident_(true) {}
  VectorStore(std::vector<ExpertView> dev, std::vector<ExpertView> host, std::vector<bool> on_host)
      : dev_(std::move(dev)), host_(std::move(host)), on_host_(std::move(on_host)), resident_(false) {}
  void request(int64_t layer, std::span<const int32_t> experts) override {
    layer_ = layer;
    asked_.clear();
    for (bool host : {false, true})
      for (int32_t e : experts)
        if (on_host_[e] == host) asked_.push_back(e);
    next_ = 0;
  }
  ExpertLease next() override {
    if (next_ >= asked_.size()) return {};
    const int32_t e = asked_[next_++];
    return make_lease(layer_, e, -1, on_host_[e] ? host_[e] : dev_[e]);
  }
  ExpertStats stats() const override { return {}; }
  bool resident() const override { return resident_; }

 protected:
  void release(int64_t, int32_t) override {}

 private:
  std::vector<ExpertView> dev_, host_;
  std::vector<bool> on_host_;
  bool resident_;
  int64_t layer_ = 0;
  std::vector<int32_t> asked_;
  size_t next_ = 0;
};

// Two shapes: widths that are multiples of 64, and widths of an odd number of 32-value groups (96,
// 160: a GEMM tile's last step half empty, a 64-row tile across the gate and up rows, a last tile of
// down rows half empty) with 200 tokens (about 75 pairs per expert: more than one tile of pairs) and
// 400 (150 pairs per expert: past kFusedPairsPerExpert, so the experts decoded for cuBLAS; fewer
// take expert_gemm, one token to four the one-token products).
struct ExpertShape {
  int64_t d, ff;
  std::vector<int64_t> tokens;
};

TEST_F(Ops, RoutedExpertsMatchTheLayerLoop) {
  std::mt19937 rng(5);
  const int64_t E = 8, k = 3;
  for (const ExpertShape& shape : {ExpertShape{256, 128, {1, 3, 40}}, ExpertShape{96, 160, {200, 400}}})
  for (RouterContract c : {RouterContract::SoftmaxTopKRenorm, RouterContract::BiasedTopKSoftmax})
    for (GgmlType t : {GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::F32}) {
      const int64_t d = shape.d, ff = shape.ff;
      std::vector<ExpertView> ec, eg;
      for (int64_t e = 0; e < E; ++e) {
        ExpertView vc, vg;
        std::tie(vc.gate, vg.gate) = weights(t, ff, d, rng, 0.1f);
        std::tie(vc.up, vg.up) = weights(t, ff, d, rng, 0.1f);
        std::tie(vc.down, vg.down) = weights(t, d, ff, rng, 0.1f);
        if (c == RouterContract::BiasedTopKSoftmax) {
          std::tie(vc.gate_bias, vg.gate_bias) = vec(gaussian(ff, rng));
          std::tie(vc.up_bias, vg.up_bias) = vec(gaussian(ff, rng));
          std::tie(vc.down_bias, vg.down_bias) = vec(gaussian(d, rng));
        }
        ec.push_back(vc);
        eg.push_back(vg);
      }
      const auto [rc, rg] = weights(GgmlType::F32, E, d, rng, 0.3f);
      const auto [bc, bg] = vec(gaussian(E, rng));
      const Activation act = c == RouterContract::BiasedTopKSoftmax ? Activation::ClampedSwiGLU : Activation::SwiGLU;
      for (int64_t n : shape.tokens) {
        SCOPED_TRACE(std::string(type_name(t)) + " tokens " + std::to_string(n) + " width " + std::to_string(d) + " contract " +
                     std::to_string(static_cast<int>(c)));
        const Twin x = twin(gaussian(n * d, rng), n, d), out = zeros(n, d);
        // The CPU runs the layer loop (it offers no routed_experts); the GPU the whole operation.
        VectorStore store(ec);
        MoeLayer layer(*cpu_, MoeShape{d, ff, E, k, c, act}, n);
        const float* bias_c = c == RouterContract::BiasedTopKSoftmax ? bc : nullptr;
        layer.forward(store, 0, rc, bias_c, x.cpu, out.cpu, ExpertOrder::Ascending);
        EXPECT_FALSE(layer.last_on_backend());
        // The GPU gets the layer through the same seam: the resident store's experts, one operation.
        VectorStore gstore(eg);
        MoeLayer glayer(*gpu_, MoeShape{d, ff, E, k, c, act}, n);
        glayer.forward(gstore, 0, rg, c == RouterContract::BiasedTopKSoftmax ? bg : nullptr, x.gpu, out.gpu, ExpertOrder::Ascending);
        ASSERT_TRUE(glayer.last_on_backend());
        const bool exact = n <= 4 || t == GgmlType::F32;
        EXPECT_LT(diff(out), exact ? 1e-4 : 5e-3);
        // Added into a residual as the ranks are summed: the bytes of the sum above, then an add.
        const std::vector<float> r0 = gaussian(n * d, rng);
        const Twin r = twin(r0, n, d), scratch = zeros(n, d);
        glayer.forward(gstore, 0, rg, c == RouterContract::BiasedTopKSoftmax ? bg : nullptr, x.gpu, scratch.gpu,
                       ExpertOrder::Ascending, r.gpu, {}, /*add_to_residual=*/true);
        ASSERT_TRUE(glayer.last_on_backend());
        const std::vector<float> sum = host(*gpu_, out.gpu), got = host(*gpu_, r.gpu);
        for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], r0[i] + sum[i]) << "value " << i;
      }
    }
}

// Experts computed by the host's threads from their packed bytes (streamed misses, host_experts.h)
// must give the device's bytes: the layer's output is compared bit for bit with every expert on the
// device, for one to four tokens, both gpt-oss's contract (biases, clamped SwiGLU) and SwiGLU.
TEST_F(Ops, ExpertsOnTheHostGiveTheDevicesBytes) {
  std::mt19937 rng(11);
  struct Shape {
    int64_t d, ff, E, k;
  };
  for (const Shape sh : {Shape{256, 128, 8, 3}, Shape{2880, 2880, 6, 4}})
    for (RouterContract c : {RouterContract::SoftmaxTopKRenorm, RouterContract::BiasedTopKSoftmax}) {
      const int64_t d = sh.d, ff = sh.ff, E = sh.E, k = sh.k;
      const Activation act = c == RouterContract::BiasedTopKSoftmax ? Activation::ClampedSwiGLU : Activation::SwiGLU;
      std::vector<ExpertView> dev(E), packed(E);
      const auto mat = [&](int64_t rows, int64_t cols, Mat& on_dev, Mat& on_host) {
        auto& file = blobs_.emplace_back(ts::row_bytes(GgmlType::MXFP4, cols) * rows);
        for (int64_t r = 0; r < rows; ++r) {
          const std::vector<float> x = gaussian(cols, rng, 0.1f);
          quant::quantize_weights(GgmlType::MXFP4, x.data(), file.data() + r * ts::row_bytes(GgmlType::MXFP4, cols), cols);
        }
        const Mat m{GgmlType::MXFP4, file.data(), rows, cols, ts::row_bytes(GgmlType::MXFP4, cols)};
        on_dev = gpu_->upload(m);
        auto& bytes = blobs_.emplace_back(gpu_->packed_bytes(m));
        on_host = gpu_->pack(m, bytes.data());
      };
      const auto bias = [&](int64_t n, const float*& on_dev, const float*& on_host) {
        const std::vector<float>& b = host_f32_.emplace_back(gaussian(n, rng));
        on_dev = gpu_->upload_f32(b);
        on_host = b.data();
      };
      for (int64_t e = 0; e < E; ++e) {
        mat(ff, d, dev[e].gate, packed[e].gate);
        mat(ff, d, dev[e].up, packed[e].up);
        mat(d, ff, dev[e].down, packed[e].down);
        if (c == RouterContract::BiasedTopKSoftmax) {
          bias(ff, dev[e].gate_bias, packed[e].gate_bias);
          bias(ff, dev[e].up_bias, packed[e].up_bias);
          bias(d, dev[e].down_bias, packed[e].down_bias);
        }
        packed[e].on_host = true;
      }
      ASSERT_TRUE(gpu_->computes_on_host(packed[0], act, 4));
      EXPECT_FALSE(gpu_->computes_on_host(packed[0], act, 5));  // more tokens take the GEMMs, which the host cannot replay
      const auto [rc, rg] = weights(GgmlType::F32, E, d, rng, 0.3f);
      const auto [bc, bg] = vec(gaussian(E, rng));
      const float* rbias = c == RouterContract::BiasedTopKSoftmax ? bg : nullptr;
      for (int64_t n = 1; n <= 4; ++n) {
        SCOPED_TRACE("d " + std::to_string(d) + " tokens " + std::to_string(n) + " contract " + std::to_string(static_cast<int>(c)));
        const Twin x = twin(gaussian(n * d, rng), n, d);
        const auto run = [&](std::vector<bool> on_host) {
          const Twin out = zeros(n, d);
          VectorStore store(dev, packed, std::move(on_host));
          MoeLayer layer(*gpu_, MoeShape{d, ff, E, k, c, act}, n);
          layer.forward(store, 0, rg, rbias, x.gpu, out.gpu, ExpertOrder::Router);
          return host(*gpu_, out.gpu);
        };
        const std::vector<float> want = run(std::vector<bool>(E, false));
        std::vector<bool> odd(E), all(E, true);
        for (int64_t e = 0; e < E; ++e) odd[e] = e % 2;
        for (const std::vector<bool>& split : {odd, all}) {
          const std::vector<float> got = run(split);
          ASSERT_EQ(got.size(), want.size());
          EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
          for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "value " << i;
        }
      }
    }
}

TEST_F(Ops, AsynchronousCopiesBetweenMemoryKinds) {
  const size_t bytes = 3 << 20;
  Buffer host = gpu_->alloc_buffer(bytes, MemKind::Host), pinned = gpu_->alloc_buffer(bytes, MemKind::PinnedHost);
  Buffer dev = gpu_->alloc_buffer(bytes, MemKind::Device), back = gpu_->alloc_buffer(bytes, MemKind::PinnedHost);
  for (const Buffer* b : {&host, &pinned, &dev, &back}) EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data) % kBufferAlign, 0u);
  auto* h = static_cast<uint8_t*>(host.data);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i * 7 + 3);
  std::memcpy(pinned.data, host.data, bytes);
  // Transfer queue fills the device buffer; compute waits for it, then copies back.
  const EventHandle filled = gpu_->create_event(), drained = gpu_->create_event();
  gpu_->copy_async(dev.data, pinned.data, bytes, Queue::Transfer);
  gpu_->record_event(filled, Queue::Transfer);
  gpu_->wait_event(Queue::Compute, filled);
  gpu_->copy_async(back.data, dev.data, bytes, Queue::Compute);
  gpu_->record_event(drained, Queue::Compute);
  gpu_->host_wait(drained);
  EXPECT_EQ(std::memcmp(back.data, host.data, bytes), 0);
  gpu_->destroy_event(filled);
  gpu_->destroy_event(drained);
  for (Buffer* b : {&host, &pinned, &dev, &back}) gpu_->free_buffer(*b);
}

// A matrix in the file's layout, copied as it is into device memory and repacked there on the
// transfer queue (a slot cache fed from files), gives the bytes the host's pack() gives.
TEST_F(Ops, RepackingOnTheDeviceGivesTheHostsPackedBytes) {
  std::mt19937 rng(7);
  const int64_t rows = 7, cols = 512;
  for (GgmlType t : kTypes) {
    SCOPED_TRACE(type_name(t));
    std::vector<uint8_t> file(ts::row_bytes(t, cols) * rows);
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> x = gaussian(cols, rng);
      quant::quantize_weights(t, x.data(), file.data() + r * ts::row_bytes(t, cols), cols);
    }
    const Mat host{t, file.data(), rows, cols, ts::row_bytes(t, cols)};
    const size_t packed = gpu_->packed_bytes(host);
    std::vector<uint8_t> want(packed, 0xAB);
    gpu_->pack(host, want.data());
    Buffer raw = gpu_->alloc_buffer(file.size(), MemKind::Device), dst = gpu_->alloc_buffer(packed, MemKind::Device);
    Buffer back = gpu_->alloc_buffer(packed, MemKind::PinnedHost);
    gpu_->copy_async(raw.data, file.data(), file.size(), Queue::Transfer);
    gpu_->pack_async(Mat{t, raw.data, rows, cols, host.row_stride}, dst.data, Queue::Transfer);
    const EventHandle done = gpu_->create_event();
    gpu_->record_event(done, Queue::Transfer);
    gpu_->wait_event(Queue::Compute, done);
    gpu_->copy_async(back.data, dst.data, packed, Queue::Compute);
    gpu_->synchronize();
    EXPECT_EQ(std::memcmp(back.data, want.data(), packed), 0);
    gpu_->destroy_event(done);
    for (Buffer* b : {&raw, &dst, &back}) gpu_->free_buffer(*b);
  }
}

}  // namespace
}  // namespace ts
