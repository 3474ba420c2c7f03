// CpuBackend::ffn, the gated feed-forward block. With int16 activations and quantized weights it is
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

}  // namespace

void CpuBackend::ffn(Act x, const FfnWeights& w, Act out, const InputNorm& norm) {
  const int64_t n_ff = w.gate->rows, n = x.n;
  if (w.up->rows != n_ff || w.down->cols != n_ff || w.gate->cols != x.dim || w.up->cols != x.dim || out.n != n ||
      out.dim < w.down->rows)
    fail("internal error: FFN of shapes gate {}x{}, up {}x{}, down {}x{} on {} x {} input", w.gate->rows, w.gate->cols,
         w.up->rows, w.up->cols, w.down->rows, w.down->cols, n, x.dim);
  const bool fused = precision_ == Precision::Int16 && fast_ && n_ff % kBlock == 0 && quantized(w.gate) &&
                     quantized(w.up) && quantized(w.down);
  if (!fused) {
    Act g = scratch(gate_rows_, n, n_ff), u = scratch(up_rows_, n, n_ff), a = scratch(act_rows_, n, n_ff);
    const MatmulOut gate_up[] = {{w.gate, g}, {w.up, u}};
    matmul_shared(x, gate_up, norm);
    if (w.gate_bias) add_bias(g, w.gate_bias);
    if (w.up_bias) add_bias(u, w.up_bias);
    glu(w.act, g, u, a);
    matmul(*w.down, a, out);
    if (w.down_bias) add_bias(out, w.down_bias);
    return;
  }
  const size_t xs = quantize_rows(x, norm, true, w.gate->type, xq_);
  const size_t ds = quant::act16_bytes(n_ff);
  xq_down_.resize(ds * n);
  const int64_t tr = n <= kDecodeTokens ? decode_task_rows(n_ff, pool_.size()) : kBlock;
  pool_.parallel_for((n_ff + tr - 1) / tr, [&](int64_t task) {
    const int64_t r0 = task * tr, rows = std::min(tr, n_ff - r0);
    thread_local std::vector<float> g, u, a;
    g.resize(static_cast<size_t>(n * tr));
    u.resize(g.size());
    a.resize(kBlock);
    auto at = [&](const Mat& m) { return static_cast<const uint8_t*>(m.data) + static_cast<size_t>(r0) * m.row_stride; };
    quant::matmul16(w.gate->type, at(*w.gate), w.gate->row_stride, rows, x.dim, xq_.data(), xs, n, g.data(), rows);
    quant::matmul16(w.up->type, at(*w.up), w.up->row_stride, rows, x.dim, xq_.data(), xs, n, u.data(), rows);
    for (int64_t b = 0; b < rows / kBlock; ++b)
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = r0 + b * kBlock;
        cpu::glu_avx2(w.act, g.data() + t * rows + b * kBlock, u.data() + t * rows + b * kBlock,
                      w.gate_bias ? w.gate_bias + j : nullptr, w.up_bias ? w.up_bias + j : nullptr, a.data(), kBlock);
        quant::quantize_act16_block(a.data(), xq_down_.data() + t * ds, n_ff, j / kBlock);
      }
  });
  const Mat& d = *w.down;
  const int64_t dr = n <= kDecodeTokens ? decode_task_rows(d.rows, pool_.size()) : kBlock;
  pool_.parallel_for((d.rows + dr - 1) / dr, [&](int64_t task) {
    const int64_t r0 = task * dr, r1 = std::min(d.rows, r0 + dr);
    const auto* W = static_cast<const uint8_t*>(d.data) + static_cast<size_t>(r0) * d.row_stride;
    quant::matmul16(d.type, W, d.row_stride, r1 - r0, n_ff, xq_down_.data(), ds, n, out.data + r0, out.dim);
    if (w.down_bias)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = r0; r < r1; ++r) out.row(t)[r] += w.down_bias[r];
  });
}

}  // namespace ts
