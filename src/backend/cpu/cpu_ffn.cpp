// CpuBackend::ffn, the gated feed-forward block. With int16 rows (either precision) and quantized weights it is
// two passes: tasks of gate/up rows (decode_task_rows) compute both products for every token, add the
// biases, apply the activation, and quantize each 32 values of each token straight into the down
// projection's input (one activation block each); then the down projection. Otherwise it is the
// composition of the separate operations (the exact path keeps their bytes).
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/ops.h"
#include "quant/kernels.h"
#include "util/error.h"

namespace ts {
namespace {

constexpr int64_t kBlock = 32;  // one int16 activation block of the down input
bool quantized(const Mat* m) { return m->type != GgmlType::F32 && m->type != GgmlType::F16 && m->type != GgmlType::BF16; }

// The fused pass over gate/up rows [r0, r0 + rows): both products for every token, the biases, the
// activation, and each 32 values of each token quantized into the down projection's input.
void gate_up_rows(const FfnWeights& w, Act x, const uint8_t* xq, size_t xs, int64_t r0, int64_t rows, uint8_t* xq_down,
                  quant::ActCodes codes) {
  const int64_t n = x.n, n_ff = w.gate->rows;
  const size_t ds = quant::act16_bytes(n_ff);
  thread_local std::vector<float> g, u, a;
  g.resize(static_cast<size_t>(n * rows));
  u.resize(g.size());
  a.resize(kBlock);
  auto at = [&](const Mat& m) { return static_cast<const uint8_t*>(m.data) + static_cast<size_t>(r0) * m.row_stride; };
  quant::matmul16(w.gate->type, at(*w.gate), w.gate->row_stride, rows, x.dim, xq, xs, n, g.data(), rows, codes);
  quant::matmul16(w.up->type, at(*w.up), w.up->row_stride, rows, x.dim, xq, xs, n, u.data(), rows, codes);
  for (int64_t b = 0; b < rows / kBlock; ++b)
    for (int64_t t = 0; t < n; ++t) {
      const int64_t j = r0 + b * kBlock;
      cpu::glu_avx2(w.act, g.data() + t * rows + b * kBlock, u.data() + t * rows + b * kBlock,
                    w.gate_bias ? w.gate_bias + j : nullptr, w.up_bias ? w.up_bias + j : nullptr, a.data(), kBlock);
      quant::quantize_act16_block(a.data(), xq_down + t * ds, n_ff, j / kBlock, codes);
    }
}

// The down projection's rows [r0, r1) with its bias.
void down_rows(const FfnWeights& w, const uint8_t* xq_down, int64_t n, int64_t r0, int64_t r1, Act out,
               quant::ActCodes codes) {
  const Mat& d = *w.down;
  const auto* W = static_cast<const uint8_t*>(d.data) + static_cast<size_t>(r0) * d.row_stride;
  quant::matmul16(d.type, W, d.row_stride, r1 - r0, d.cols, xq_down, quant::act16_bytes(d.cols), n, out.data + r0, out.dim,
                  codes);
  if (w.down_bias)
    for (int64_t t = 0; t < n; ++t)
      for (int64_t r = r0; r < r1; ++r) out.row(t)[r] += w.down_bias[r];
}

void check_shapes(Act x, const FfnWeights& w, Act out) {
  const int64_t n_ff = w.gate->rows;
  if (w.up->rows != n_ff || w.down->cols != n_ff || w.gate->cols != x.dim || w.up->cols != x.dim || out.n != x.n ||
      out.dim < w.down->rows)
    fail("internal error: FFN of shapes gate {}x{}, up {}x{}, down {}x{} on {} x {} input", w.gate->rows, w.gate->cols,
         w.up->rows, w.up->cols, w.down->rows, w.down->cols, x.n, x.dim);
}

}  // namespace

bool CpuBackend::fused_ffn(const FfnWeights& w) const {
  return precision_ != Precision::Exact && fast_ && w.gate->rows % kBlock == 0 && quantized(w.gate) && quantized(w.up) &&
         quantized(w.down);
}

void CpuBackend::ffn(Act x, const FfnWeights& w, Act out, const InputNorm& norm) {
  check_shapes(x, w, out);
  const int64_t n_ff = w.gate->rows, n = x.n;
  if (!fused_ffn(w)) {
    Act g = scratch(gate_rows_, n, n_ff), u = scratch(up_rows_, n, n_ff), a = scratch(act_rows_, n, n_ff);
    const MatmulOut gate_up[] = {{w.gate, g}, {w.up, u}}, down{w.down, out};
    products(x, gate_up, norm, ffn_codes_);
    if (w.gate_bias) add_bias(g, w.gate_bias);
    if (w.up_bias) add_bias(u, w.up_bias);
    glu(w.act, g, u, a);
    products(a, {&down, 1}, InputNorm{}, ffn_codes_);
    if (w.down_bias) add_bias(out, w.down_bias);
    return;
  }
  const size_t xs = quantize_rows(x, norm, ffn_codes_, xq_);
  xq_down_.resize(quant::act16_bytes(n_ff) * n);
  const int64_t tr = n <= kDecodeTokens ? decode_task_rows(n_ff, pool_.size()) : kBlock;
  pool_.parallel_for((n_ff + tr - 1) / tr, [&](int64_t task) {
    const int64_t r0 = task * tr;
    gate_up_rows(w, x, xq_.data(), xs, r0, std::min(tr, n_ff - r0), xq_down_.data(), ffn_codes_);
  });
  const int64_t d_rows = w.down->rows;
  const int64_t dr = n <= kDecodeTokens ? decode_task_rows(d_rows, pool_.size()) : kBlock;
  pool_.parallel_for((d_rows + dr - 1) / dr, [&](int64_t task) {
    const int64_t r0 = task * dr;
    down_rows(w, xq_down_.data(), n, r0, std::min(d_rows, r0 + dr), out, ffn_codes_);
  });
}

// Whole FFNs per task: two dispatches for all of them instead of two per FFN, and each thread streams
// whole matrices. Only where every FFN takes the fused path with few tokens, and there are at least
// as many FFNs as threads (fewer would leave threads idle).
bool CpuBackend::ffn_many(std::span<const FfnJob> jobs) {
  if (static_cast<int64_t>(jobs.size()) < pool_.size()) return false;
  for (const FfnJob& j : jobs)
    if (!fused_ffn(j.w) || j.x.n > kDecodeTokens) return false;
  many_xq_.resize(jobs.size());
  many_xs_.resize(jobs.size());
  many_down_.resize(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    check_shapes(jobs[i].x, jobs[i].w, jobs[i].out);
    many_xs_[i] = quantize_rows(jobs[i].x, {}, ffn_codes_, many_xq_[i]);
    many_down_[i].resize(quant::act16_bytes(jobs[i].w.gate->rows) * jobs[i].x.n);
  }
  pool_.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i) {
    const FfnJob& j = jobs[i];
    gate_up_rows(j.w, j.x, many_xq_[i].data(), many_xs_[i], 0, j.w.gate->rows, many_down_[i].data(), ffn_codes_);
  });
  pool_.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i) {
    const FfnJob& j = jobs[i];
    down_rows(j.w, many_down_[i].data(), j.x.n, 0, j.w.down->rows, j.out, ffn_codes_);
  });
  return true;
}

}  // namespace ts
