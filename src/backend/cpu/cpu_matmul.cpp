// CpuBackend matrix products. Work is split by output rows: every output element is computed by one
// thread, by the same kernel code whatever the split, so the bytes do not depend on the thread count.
// The int16 and int8 paths quantize each input row once per call into int16 rows, for all the
// matrices that share it (normalising it on the way when an InputNorm is given). Only the FFNs take
// 8-bit codes on the int8 path; attention's projections, the head and the routers keep int16 ones:
// their rounding feeds softmax and the logits directly (on SmolLM2's 349 real positions, 8-bit codes
// here as well put the mean KL at 4.5e-3 instead of 1.8e-3), and the FFNs hold most of the products.
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/ops.h"
#include "quant/kernels.h"
#include "util/error.h"

namespace ts {
namespace {

// Rows per task: large enough to amortise dispatch, small enough to balance two cores (a multiple
// of the int16 kernels' 8-row groups and of their 32-value activation blocks).
constexpr int64_t kRowsPerTask = 32;
// Rows decoded to f32 per task on the exact path: the decoded block stays in L2.
constexpr int64_t kDecodedRowsPerTask = 16;

bool float_weights(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

}  // namespace

Act CpuBackend::scratch(std::vector<float>& buf, int64_t n, int64_t dim) {
  buf.resize(static_cast<size_t>(n * dim));
  return Act{buf.data(), n, dim};
}

Act CpuBackend::normalised(Act x, const InputNorm& norm) {
  if (!norm.w) return x;
  Act h = scratch(norm_rows_, x.n, x.dim);
  rms_norm(x, norm.w, norm.eps, x.dim, h);
  return h;
}

size_t CpuBackend::quantize_rows(Act x, const InputNorm& norm, quant::ActCodes codes, std::vector<uint8_t>& dst) {
  const size_t stride = quant::act16_bytes(x.dim);
  dst.resize(stride * x.n);
  const bool fused = norm.w && fast_ && x.dim % 8 == 0;
  const Act src = fused ? x : normalised(x, norm);
  pool_.parallel_for(x.n, [&](int64_t t) {
    const float* row = src.row(t);
    thread_local std::vector<float> normed;
    if (fused) {  // the normalised row only passes through L1 on its way to the quantizer
      normed.resize(static_cast<size_t>(x.dim));
      cpu::rms_norm_avx2(row, norm.w, norm.eps, x.dim, x.dim, normed.data());
      row = normed.data();
    }
    quant::quantize_act16(row, dst.data() + t * stride, x.dim, codes);
  });
  return stride;
}

void CpuBackend::matmul(const Mat& w, Act x, Act y) {
  const MatmulOut out{&w, y};
  products(x, {&out, 1}, InputNorm{});
}

void CpuBackend::matmul_shared(Act x, std::span<const MatmulOut> outs, const InputNorm& norm) {
  // Biases and accumulation come after all the products, output by output: the bytes of the
  // products followed by add_bias and add (an accumulated product lands in acc_ first).
  size_t acc_floats = 0;
  for (const MatmulOut& o : outs) acc_floats += o.accumulate ? static_cast<size_t>(o.y.n * o.y.dim) : 0;
  if (acc_floats == 0 && std::none_of(outs.begin(), outs.end(), [](const MatmulOut& o) { return o.bias != nullptr; })) {
    products(x, outs, norm);
    return;
  }
  acc_.resize(acc_floats);
  shared_outs_.assign(outs.begin(), outs.end());
  size_t off = 0;
  for (MatmulOut& o : shared_outs_)
    if (o.accumulate) {
      o.y = Act{acc_.data() + off, o.y.n, o.y.dim};
      off += static_cast<size_t>(o.y.n * o.y.dim);
    }
  products(x, shared_outs_, norm);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].bias) add_bias(shared_outs_[i].y, outs[i].bias);
    if (outs[i].accumulate) add(outs[i].y, shared_outs_[i].y);
  }
}

void CpuBackend::products(Act x, std::span<const MatmulOut> outs, const InputNorm& norm, quant::ActCodes codes) {
  for (const MatmulOut& o : outs)
    if (o.w->cols != x.dim || o.y.n != x.n || o.y.dim < o.w->rows)
      fail("internal error: matmul of {} x {} weights with {} x {} input into {} x {}", o.w->rows, o.w->cols, x.n, x.dim,
           o.y.n, o.y.dim);
  if (precision_ == Precision::Exact) {
    // Exact activations: decode each weight row to f32 once per call and multiply it with the f32
    // activations of every token. The only error left is the weights' own quantization.
    const Act in = normalised(x, norm);
    for (const MatmulOut& o : outs) {
      const Mat& w = *o.w;
      const bool decode = !float_weights(w.type);
      const int64_t per_task = decode ? kDecodedRowsPerTask : kRowsPerTask;
      pool_.parallel_for((w.rows + per_task - 1) / per_task, [&](int64_t task) {
        const int64_t r0 = task * per_task, r1 = std::min(w.rows, r0 + per_task);
        const auto* W = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r0) * w.row_stride;
        if (!decode) {
          quant::matmul(w.type, W, w.row_stride, r1 - r0, w.cols, in.data, in.dim * sizeof(float), in.n,
                        o.y.data + r0, o.y.dim);
          return;
        }
        thread_local std::vector<float> rows;
        rows.resize(static_cast<size_t>(kDecodedRowsPerTask) * w.cols);
        for (int64_t r = r0; r < r1; ++r)
          quant::dequantize(w.type, W + static_cast<size_t>(r - r0) * w.row_stride, rows.data() + (r - r0) * w.cols, w.cols);
        quant::matmul(GgmlType::F32, rows.data(), w.cols * sizeof(float), r1 - r0, w.cols, in.data,
                      in.dim * sizeof(float), in.n, o.y.data + r0, o.y.dim);
      });
    }
    return;
  }

  // Quantized inputs: one int16 row format for every weight type, quantized once per call.
  size_t xq_stride = 0;
  bool quantized = false;
  size_t i = 0;
  while (i < outs.size()) {
    const bool f32 = float_weights(outs[i].w->type);
    if (!f32 && !quantized) {
      xq_stride = quantize_rows(x, norm, codes, xq_);
      quantized = true;
    }
    const Act in = f32 ? normalised(x, norm) : x;
    // One pass over the rows of every following output that takes the same input (f32 or quantized).
    size_t j = i;
    task_end_.clear();
    task_rows_.clear();
    for (int64_t total = 0; j < outs.size(); ++j) {
      const bool jf32 = float_weights(outs[j].w->type);
      if (jf32 != f32) break;
      const int64_t per_task = x.n <= kDecodeTokens ? decode_task_rows(outs[j].w->rows, pool_.size()) : kRowsPerTask;
      total += (outs[j].w->rows + per_task - 1) / per_task;
      task_end_.push_back(total);
      task_rows_.push_back(per_task);
    }
    pool_.parallel_for(task_end_.back(), [&](int64_t task) {
      const size_t o = static_cast<size_t>(std::upper_bound(task_end_.begin(), task_end_.end(), task) - task_end_.begin());
      const Mat& w = *outs[i + o].w;
      const int64_t first = o ? task_end_[o - 1] : 0, r0 = (task - first) * task_rows_[o];
      const int64_t r1 = std::min(w.rows, r0 + task_rows_[o]);
      const auto* W = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r0) * w.row_stride;
      float* Y = outs[i + o].y.data + r0;
      const size_t ys = outs[i + o].y.dim;
      if (f32) quant::matmul(w.type, W, w.row_stride, r1 - r0, w.cols, in.data, in.dim * sizeof(float), in.n, Y, ys);
      else quant::matmul16(w.type, W, w.row_stride, r1 - r0, w.cols, xq_.data(), xq_stride, x.n, Y, ys, codes);
    });
    i = j;
  }
}

}  // namespace ts
