#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/attention.h"
#include "backend/cpu/ops.h"
#include "quant/kernels.h"
#include "util/cpu_features.h"
#include "util/error.h"

namespace ts {
namespace {

// Elementwise work below this many values runs on the calling thread: waking the pool costs more.
constexpr int64_t kParallelElems = 16384;

}  // namespace

CpuBackend::CpuBackend(int n_threads, Precision precision, KvType kv_type)
    : pool_(n_threads),
      precision_(precision),
      ffn_codes_(precision == Precision::Int8 ? quant::ActCodes::int8 : quant::ActCodes::int16),
      kv_type_(kv_type),
      fast_(precision != Precision::Exact && cpu_features().avx2) {
  if (kv_type == KvType::F16 && precision == Precision::Exact)
    fail("--kv-type f16 rounds K and V: the exact precision needs --kv-type f32");
  if (kv_type == KvType::F16 && !cpu_features().avx2) fail("--kv-type f16 needs a CPU with AVX2 and F16C");
}

std::unique_ptr<Backend> make_cpu_backend(int n_threads, Precision precision, KvType kv_type) {
  return std::make_unique<CpuBackend>(n_threads, precision, kv_type);
}

KvType parse_kv_type(const std::string& name) {
  if (name == "f32") return KvType::F32;
  if (name == "f16") return KvType::F16;
  fail("unknown KV cache type '{}' (expected f32 or f16)", name);
}

Precision parse_precision(const std::string& name) {
  if (name == "int16") return Precision::Int16;
  if (name == "exact") return Precision::Exact;
  if (name == "int8") return Precision::Int8;
  fail("unknown precision '{}' (expected int16, exact or int8)", name);
}

Act CpuBackend::alloc(int64_t n, int64_t dim) {
  const size_t bytes = (static_cast<size_t>(n * dim) * sizeof(float) + 63) / 64 * 64;
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes ? bytes : 64));
  if (!p) fail("out of memory allocating {} x {} activations", n, dim);
  std::memset(p, 0, bytes);
  return Act{p, n, dim};
}

void CpuBackend::release(Act& a) {
  std::free(a.data);
  a = Act{};
}

KvHandle CpuBackend::alloc_kv(int64_t n_layer, int64_t n_ctx, int64_t width) {
  KvSeq seq;
  seq.n_ctx = n_ctx;
  seq.width = width;
  // Zeroed, and rounded up to whole attention blocks: the kernels read whole blocks of keys and
  // values and mask the positions not yet written (or past the context).
  const int64_t positions = (n_ctx + cpu::kAttnBlock - 1) / cpu::kAttnBlock * cpu::kAttnBlock;
  seq.positions = positions;
  const size_t bytes = static_cast<size_t>(positions) * width * kv_elem_bytes();
  for (int64_t l = 0; l < n_layer; ++l) {
    seq.k.emplace_back(new (std::nothrow) uint8_t[bytes]());
    seq.v.emplace_back(new (std::nothrow) uint8_t[bytes]());
    if (!seq.k.back() || !seq.v.back())
      fail("out of memory allocating a KV cache of {} positions (reduce --ctx)", n_ctx);
  }
  const KvHandle h = next_kv_++;
  kv_.emplace(h, std::move(seq));
  return h;
}

void CpuBackend::free_kv(KvHandle kv) { kv_.erase(kv); }

size_t CpuBackend::kv_bytes() const {
  size_t total = 0;
  for (const auto& [h, s] : kv_) total += 2 * s.k.size() * static_cast<size_t>(s.n_ctx) * s.width * kv_elem_bytes();
  return total;
}

Buffer CpuBackend::alloc_buffer(size_t bytes, MemKind kind) {
  // Every kind is host memory on the CPU; the rounding keeps O_DIRECT reads into whole pages legal.
  const size_t rounded = (bytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
  void* p = std::aligned_alloc(kBufferAlign, rounded ? rounded : kBufferAlign);
  if (!p) fail("out of memory allocating a {}-byte buffer", bytes);
  std::memset(p, 0, rounded);
  return Buffer{p, bytes, kind};
}

void CpuBackend::free_buffer(Buffer& b) {
  std::free(b.data);
  b = Buffer{};
}

const float* CpuBackend::upload_f32(const std::vector<float>& v) {
  vectors_.push_back(v);
  return vectors_.back().data();
}

void CpuBackend::copy_async(void* dst, const void* src, size_t bytes, Queue) { std::memcpy(dst, src, bytes); }

void CpuBackend::begin_step(const Step& st) {
  ids_.assign(st.ids, st.ids + st.n_rows);
  seqs_.assign(st.seqs, st.seqs + st.n_seqs);
  out_rows_.assign(st.out_rows, st.out_rows + st.n_out);
  row_pos_.resize(st.n_rows);
  row_seq_.resize(st.n_rows);
  for (int64_t s = 0; s < st.n_seqs; ++s) {
    const SeqRows& q = seqs_[s];
    if (!kv_.count(q.kv)) fail("internal error: step names an unknown KV cache {}", q.kv);
    for (int64_t i = 0; i < q.n; ++i) {
      row_pos_[q.row0 + i] = q.pos0 + i;
      row_seq_[q.row0 + i] = s;
    }
  }
  rope_.clear();
}

template <class Fn>
void CpuBackend::for_rows(int64_t n, int64_t dim, Fn&& fn) {
  if (n > 1 && n * dim >= kParallelElems) pool_.parallel_for(n, fn);
  else for (int64_t i = 0; i < n; ++i) fn(i);
}

void CpuBackend::embed(const Mat& table, Act out) {
  for_rows(out.n, out.dim, [&](int64_t i) {
    const auto* row = static_cast<const uint8_t*>(table.data) + static_cast<size_t>(ids_[i]) * table.row_stride;
    quant::dequantize(table.type, row, out.row(i), table.cols);
  });
}

void CpuBackend::rms_norm(Act x, const float* w, float eps, int64_t group, Act out) {
  if (fast_ && group % 8 == 0) {
    auto row = [&](int64_t i) { cpu::rms_norm_avx2(x.row(i), w, eps, x.dim, group, out.row(i)); };
    if (x.n * x.dim >= kParallelElems) pool_.parallel_for(x.n, row);
    else for (int64_t i = 0; i < x.n; ++i) row(i);
    return;
  }
  const int64_t groups = x.dim / group;
  pool_.parallel_for(x.n, [&](int64_t i) {
    const float* src = x.row(i);
    float* dst = out.row(i);
    for (int64_t g = 0; g < groups; ++g) {
      const float* s = src + g * group;
      double ss = 0;
      for (int64_t j = 0; j < group; ++j) ss += static_cast<double>(s[j]) * s[j];
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / group + eps));
      for (int64_t j = 0; j < group; ++j) dst[g * group + j] = s[j] * inv * w[j];
    }
  });
}

void CpuBackend::add_bias(Act y, const float* b) {
  for_rows(y.n, y.dim, [&](int64_t i) {
    float* r = y.row(i);
    for (int64_t j = 0; j < y.dim; ++j) r[j] += b[j];
  });
}

void CpuBackend::add(Act dst, Act src) {
  for_rows(dst.n, dst.dim, [&](int64_t i) {
    float* d = dst.row(i);
    const float* s = src.row(i);
    for (int64_t j = 0; j < dst.dim; ++j) d[j] += s[j];
  });
}

void CpuBackend::scale(Act x, float s) {
  for_rows(x.n, x.dim, [&](int64_t i) {
    float* r = x.row(i);
    for (int64_t j = 0; j < x.dim; ++j) r[j] *= s;
  });
}

void CpuBackend::rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p) {
  // Layers that rotate alike share one table per step (gemma has two kinds of layer).
  auto it = std::find_if(rope_.begin(), rope_.end(), [&](const RopeTable& t) { return t.params == p; });
  if (it == rope_.end()) {
    rope_.push_back(RopeTable{p, {}, {}});
    compute_rope_table(row_pos_, rope_.back());
    it = rope_.end() - 1;
  }
  const RopeTable& t = *it;
  const int64_t half = p.n_rot / 2;
  const bool neox = p.layout == RopeParams::Layout::NeoX;
  for_rows(x.n, x.dim, [&](int64_t i) {
    const float* c = t.cos.data() + i * half;
    const float* s = t.sin.data() + i * half;
    for (int64_t h = 0; h < n_head; ++h) {
      float* v = x.row(i) + h * head_dim;
      for (int64_t j = 0; j < half; ++j) {
        // AdjacentPairs rotates (v[2j], v[2j+1]) (GGUF's llama layout, after the converter's
        // permutation); NeoX rotates (v[j], v[j + n_rot/2]).
        float& a = neox ? v[j] : v[2 * j];
        float& b = neox ? v[j + half] : v[2 * j + 1];
        const float a0 = a, b0 = b;
        a = a0 * c[j] - b0 * s[j];
        b = a0 * s[j] + b0 * c[j];
      }
    }
  });
}

void CpuBackend::glu(Activation a, Act gate, Act up, Act out) {
  if (fast_ && gate.dim % 8 == 0) {
    auto row = [&](int64_t i) { cpu::glu_avx2(a, gate.row(i), up.row(i), nullptr, nullptr, out.row(i), gate.dim); };
    if (gate.n * gate.dim >= kParallelElems) pool_.parallel_for(gate.n, row);
    else for (int64_t i = 0; i < gate.n; ++i) row(i);
    return;
  }
  pool_.parallel_for(gate.n, [&](int64_t i) {
    const float* g = gate.row(i);
    const float* u = up.row(i);
    float* o = out.row(i);
    for (int64_t j = 0; j < gate.dim; ++j) {
      switch (a) {
        case Activation::SwiGLU: o[j] = g[j] / (1.0f + std::exp(-g[j])) * u[j]; break;
        case Activation::GeluTanhGLU: {
          const float x = g[j];
          o[j] = 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x))) * u[j];
          break;
        }
        case Activation::ClampedSwiGLU: {
          const float x = std::min(g[j], 7.0f), y = std::clamp(u[j], -7.0f, 7.0f);
          o[j] = x / (1.0f + std::exp(-1.702f * x)) * (y + 1.0f);
          break;
        }
      }
    }
  });
}

void CpuBackend::gather_rows(Act src, const int32_t* rows, int64_t n, Act dst) {
  for_rows(n, src.dim, [&](int64_t i) { std::memcpy(dst.row(i), src.row(rows[i]), src.dim * sizeof(float)); });
}

void CpuBackend::scatter_rows(Act src, const int32_t* rows, int64_t n, Act dst) {
  for_rows(n, src.dim, [&](int64_t i) { std::memcpy(dst.row(rows[i]), src.row(i), src.dim * sizeof(float)); });
}

void CpuBackend::combine_ranked(Act slots, const float* weights, int64_t k, Act out) {
  for_rows(out.n, out.dim * k, [&](int64_t t) {
    float* o = out.row(t);
    std::fill(o, o + out.dim, 0.0f);
    for (int64_t r = 0; r < k; ++r) {
      const float wgt = weights[t * k + r];
      const float* s = slots.row(t * k + r);
      for (int64_t j = 0; j < out.dim; ++j) o[j] += wgt * s[j];
    }
  });
}

void CpuBackend::steer(Act x, const SteerParams& p) {
  using Mode = SteerParams::Mode;
  const float* d = p.direction;
  if (p.mode == Mode::Add && p.gate <= 0) {
    // llama.cpp's control vector: a plain f32 add (the same bytes as its graph's add).
    pool_.parallel_for(x.n, [&](int64_t i) {
      float* r = x.row(i);
      for (int64_t j = 0; j < x.dim; ++j) r[j] += p.alpha * d[j];
    });
    return;
  }
  pool_.parallel_for(x.n, [&](int64_t i) {
    float* r = x.row(i);
    // c = d^ . x and |x|^2 in double, in element order: deterministic and free of cancellation.
    double dot = 0, sq = 0;
    for (int64_t j = 0; j < x.dim; ++j) {
      dot += static_cast<double>(d[j]) * r[j];
      sq += static_cast<double>(r[j]) * r[j];
    }
    const double c = dot / p.norm;
    if (std::abs(c) < p.gate) return;
    if (p.mode == Mode::Add) {
      for (int64_t j = 0; j < x.dim; ++j) r[j] += p.alpha * d[j];
      return;
    }
    // Projection modes move x along d^ by `step`.
    const double step = p.mode == Mode::Clamp ? p.target - c : -static_cast<double>(p.alpha) * c;
    double rescale = 1;
    if (p.mode == Mode::Renorm) {
      // |x'|^2 = |x|^2 - alpha (2 - alpha) c^2 after the ablation; restore |x| when that is positive.
      const double after = sq - p.alpha * (2.0 - p.alpha) * c * c;
      if (after > 0) rescale = std::sqrt(sq / after);
    }
    const double k = step / p.norm;
    for (int64_t j = 0; j < x.dim; ++j) r[j] = static_cast<float>((r[j] + k * d[j]) * rescale);
  });
}

void CpuBackend::select_output_rows(Act x, int64_t first, Act out) {
  for_rows(out.n, x.dim, [&](int64_t i) { std::memcpy(out.row(i), x.row(out_rows_[first + i]), x.dim * sizeof(float)); });
}

void CpuBackend::to_host(Act a, float* dst) {
  if (dst != a.data) std::memcpy(dst, a.data, a.n * a.dim * sizeof(float));
}

}  // namespace ts
