// CpuBackend attention: K and V of the step's rows go into their sequences' caches, then each q head
// attends over its sequence's cache up to its own position. Two implementations:
//  - reference (Precision::Exact): per (row, head), scores, a two-pass softmax summed in double, and
//    the weighted sum of V; the original engine's bytes;
//  - fast: flash-style kernels (attention.h), tasks of (sequence, kv head, 8 rows, key chunk), the
//    chunks of a long row merged afterwards in chunk order.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/attention.h"
#include "backend/cpu/cpu_backend.h"
#include "util/error.h"

namespace ts {
namespace {

constexpr int64_t kRowsPerAttnTask = 8;

}  // namespace

namespace cpu {

void attend_merge(const float* states, int64_t n, int64_t stride, const float* sink, int64_t head_dim, float* out) {
  float m = sink ? *sink : -INFINITY;
  for (int64_t c = 0; c < n; ++c) m = std::max(m, states[c * stride]);
  float l = sink ? std::exp(*sink - m) : 0.0f;
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t c = 0; c < n; ++c) {
    const float* st = states + c * stride;
    const float w = std::exp(st[0] - m);
    l += st[1] * w;
    for (int64_t e = 0; e < head_dim; ++e) out[e] += st[2 + e] * w;
  }
  const float inv = 1.0f / l;
  for (int64_t e = 0; e < head_dim; ++e) out[e] *= inv;
}

}  // namespace cpu

void CpuBackend::attention(int64_t layer, Act q, Act k, Act v, const AttentionParams& p, Act out) {
  if (p.rope) {
    rope(q, p.n_head, p.head_dim, *p.rope);
    rope(k, p.n_head_kv, p.head_dim, *p.rope);
  }
  // The step's K and V rows go into the caches first: later rows of a sequence attend to earlier
  // ones of the same step.
  const size_t eb = kv_elem_bytes();
  const int64_t hd = p.head_dim;
  auto write_row = [&](int64_t i) {
    const KvSeq& kv = kv_.at(seqs_[row_seq_[i]].kv);
    for (int64_t h = 0; h < p.n_head_kv; ++h) {
      const size_t at = static_cast<size_t>((h * kv.positions + row_pos_[i]) * hd) * eb;
      uint8_t* kd = kv.k[layer].get() + at;
      uint8_t* vd = kv.v[layer].get() + at;
      if (kv_type_ == KvType::F16) {
        cpu::store_f16_avx2(k.row(i) + h * hd, reinterpret_cast<uint16_t*>(kd), hd);
        cpu::store_f16_avx2(v.row(i) + h * hd, reinterpret_cast<uint16_t*>(vd), hd);
      } else {
        std::memcpy(kd, k.row(i) + h * hd, hd * sizeof(float));
        std::memcpy(vd, v.row(i) + h * hd, hd * sizeof(float));
      }
    }
  };
  if (q.n >= 64) pool_.parallel_for(q.n, write_row);
  else for (int64_t i = 0; i < q.n; ++i) write_row(i);
  if (fast_ && p.head_dim % 8 == 0) attention_fast(layer, q, p, out);
  else attention_reference(layer, q, p, out);
}

void CpuBackend::attention_reference(int64_t layer, Act q, const AttentionParams& p, Act out) {
  const int64_t hd = p.head_dim, group = p.n_head / p.n_head_kv;
  pool_.parallel_for(q.n * p.n_head, [&](int64_t task) {
    const int64_t i = task / p.n_head, h = task % p.n_head, kvh = h / group;
    const KvSeq& kv = kv_.at(seqs_[row_seq_[i]].kv);
    const auto* K = reinterpret_cast<const float*>(kv.k[layer].get()) + kvh * kv.positions * hd;
    const auto* V = reinterpret_cast<const float*>(kv.v[layer].get()) + kvh * kv.positions * hd;
    const int64_t pos = row_pos_[i];
    const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
    thread_local std::vector<float> scores;
    scores.resize(pos - lo + 1);
    const float* qh = q.row(i) + h * hd;
    float mx = p.sinks ? p.sinks[h] : -INFINITY;
    for (int64_t j = lo; j <= pos; ++j) {
      const float* kj = K + j * hd;
      float d = 0;
      for (int64_t e = 0; e < hd; ++e) d += qh[e] * kj[e];
      scores[j - lo] = d * p.scale;
      mx = std::max(mx, scores[j - lo]);
    }
    // The sink is one extra logit in the denominator only: it lets a head attend to "nothing".
    double sum = p.sinks ? std::exp(static_cast<double>(p.sinks[h] - mx)) : 0.0;
    for (auto& s : scores) {
      s = std::exp(s - mx);
      sum += s;
    }
    const float inv = static_cast<float>(1.0 / sum);
    float* o = out.row(i) + h * hd;
    std::fill(o, o + hd, 0.0f);
    for (int64_t j = lo; j <= pos; ++j) {
      const float wgt = scores[j - lo] * inv;
      const float* vj = V + j * hd;
      for (int64_t e = 0; e < hd; ++e) o[e] += wgt * vj[e];
    }
  });
}

void CpuBackend::attention_fast(int64_t layer, Act q, const AttentionParams& p, Act out) {
  const int64_t hd = p.head_dim, G = p.n_head / p.n_head_kv, sf = cpu::attn_state_floats(hd);
  cpu::AttnLayer L;
  L.head_dim = hd;
  L.group = G;
  L.scale = p.scale;
  L.window = p.window;
  L.f16 = kv_type_ == KvType::F16;
  auto first_chunk = [&](int64_t i) { return cpu::attn_first_key(L, row_pos_[i]) / cpu::kAttnChunk; };
  auto n_chunks = [&](int64_t i) { return row_pos_[i] / cpu::kAttnChunk - first_chunk(i) + 1; };

  // States: per row, per chunk it sees, per head. Offsets in units of one chunk's heads.
  std::vector<int64_t>& off = attn_offsets_;
  off.assign(static_cast<size_t>(q.n) + 1, 0);
  bool multi = false;
  for (int64_t i = 0; i < q.n; ++i) {
    off[i + 1] = off[i] + n_chunks(i);
    multi = multi || n_chunks(i) > 1;
  }
  attn_parts_.resize(static_cast<size_t>(off[q.n] * p.n_head * sf));
  auto state = [&](int64_t i, int64_t chunk, int64_t head) {
    return attn_parts_.data() + ((off[i] + chunk - first_chunk(i)) * p.n_head + head) * sf;
  };

  std::vector<AttnTask>& tasks = attn_tasks_;
  tasks.clear();
  for (int64_t s = 0; s < static_cast<int64_t>(seqs_.size()); ++s)
    for (int64_t r0 = seqs_[s].row0; r0 < seqs_[s].row0 + seqs_[s].n; r0 += kRowsPerAttnTask) {
      const int64_t n = std::min(kRowsPerAttnTask, seqs_[s].row0 + seqs_[s].n - r0);
      const int64_t c_lo = first_chunk(r0), c_hi = row_pos_[r0 + n - 1] / cpu::kAttnChunk;
      for (int64_t g = 0; g < p.n_head_kv; ++g)
        for (int64_t c = c_lo; c <= c_hi; ++c) tasks.push_back(AttnTask{s, r0, n, g, c});
    }
  auto merge = [&](int64_t i, int64_t h) {
    cpu::attend_merge(state(i, first_chunk(i), h), n_chunks(i), p.n_head * sf, p.sinks ? p.sinks + h : nullptr, hd,
                      out.row(i) + h * hd);
  };
  pool_.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t t) {
    const AttnTask& tk = tasks[t];
    const KvSeq& kv = kv_.at(seqs_[tk.seq].kv);
    cpu::AttnLayer lk = L;
    lk.k = kv.k[layer].get();
    lk.v = kv.v[layer].get();
    lk.key_stride = p.head_dim;
    lk.head_stride = kv.positions * p.head_dim;
    cpu::AttnRow rows[kRowsPerAttnTask];
    for (int64_t r = 0; r < tk.n; ++r) {
      const int64_t i = tk.row0 + r;
      rows[r].q = q.row(i);
      rows[r].pos = row_pos_[i];
      const bool sees = tk.chunk >= first_chunk(i) && tk.chunk <= row_pos_[i] / cpu::kAttnChunk;
      rows[r].state = sees ? state(i, tk.chunk, tk.kv_head * G) : nullptr;
    }
    cpu::attend_chunk_avx2(lk, rows, tk.n, tk.kv_head, tk.chunk);
    // A row that sees one chunk is finished by the task of that chunk; longer rows are merged below,
    // once all their chunks are done. Either way the same merge computes the output. (A task also
    // holds rows that do not see its chunk, with a sliding window: merging those here would read
    // another task's state while it is being written.)
    for (int64_t r = 0; r < tk.n; ++r)
      if (rows[r].state && n_chunks(tk.row0 + r) == 1)
        for (int64_t h = tk.kv_head * G; h < (tk.kv_head + 1) * G; ++h) merge(tk.row0 + r, h);
  });
  if (multi)
    pool_.parallel_for(q.n * p.n_head, [&](int64_t t) {
      const int64_t i = t / p.n_head, h = t % p.n_head;
      if (n_chunks(i) > 1) merge(i, h);
    });
}

}  // namespace ts
