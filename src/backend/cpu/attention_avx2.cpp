// The attention kernel of the fast path (attention.h), for AVX2 + FMA + F16C.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/simd_math_avx2.h"

namespace ts::cpu {
namespace {

// Lane u of the result is the sum of the 8 lanes of a[u] (a fixed tree of adds).
inline __m256 reduce8(const __m256 (&a)[8]) {
  __m256 t[4];
  for (int i = 0; i < 4; ++i) t[i] = _mm256_add_ps(_mm256_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm256_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  const __m256 lo = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t[0]), _mm256_castps_pd(t[1]))),
                                  _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t[0]), _mm256_castps_pd(t[1]))));
  const __m256 hi = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t[2]), _mm256_castps_pd(t[3]))),
                                  _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t[2]), _mm256_castps_pd(t[3]))));
  return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
}

// Keys j0..j1 of one head of an f16 cache as floats, [j - j0][hd] from out[0].
inline void widen_block(const void* cache, int64_t stride, int64_t off, int64_t hd, int64_t j0, int64_t j1, float* out) {
  for (int64_t j = j0; j <= j1; ++j) {
    const uint16_t* src = static_cast<const uint16_t*>(cache) + j * stride + off;
    float* dst = out + (j - j0) * hd;
    for (int64_t i = 0; i < hd; i += 8)
      _mm256_store_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
}

constexpr int64_t kHeads = 8;  // q heads whose scores are computed before their softmax steps

// kVecs: head_dim / 8 when known at compile time (the loops over a head's vectors unroll), else 0.
template <bool F16, int64_t kVecs>
void chunk(const AttnLayer& L, const AttnRow* rows, int64_t n_rows, int64_t kv_head, int64_t c) {
  const int64_t hd = L.head_dim, G = L.group, vecs = kVecs ? kVecs : hd / 8, off = kv_head * L.head_stride;
  const int64_t c0 = c * kAttnChunk, c1 = c0 + kAttnChunk - 1;
  int64_t lo_all = INT64_MAX, hi_all = -1;
  const int64_t sf = attn_state_floats(hd);
  for (int64_t r = 0; r < n_rows; ++r) {
    if (!rows[r].state) continue;
    lo_all = std::min(lo_all, std::max(attn_first_key(L, rows[r].pos), c0));
    hi_all = std::max(hi_all, std::min(rows[r].pos, c1));
    for (int64_t h = 0; h < G; ++h) {
      float* st = rows[r].state + h * sf;
      st[0] = -INFINITY;
      std::fill(st + 1, st + sf, 0.0f);
    }
  }
  alignas(32) float prob[kAttnBlock];
  // An f16 cache's block is widened to floats once for every row and head of the group (it was
  // converted again in each): the same values in the same sums, so the same bytes.
  thread_local std::vector<float> widened;
  if constexpr (F16) widened.resize(static_cast<size_t>(2 * kAttnBlock * hd + 8));
  float* const kf = F16 ? reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(widened.data()) + 31) & ~uintptr_t{31}) : nullptr;
  float* const vf = F16 ? kf + kAttnBlock * hd : nullptr;
  for (int64_t b0 = lo_all / kAttnBlock * kAttnBlock; b0 <= hi_all; b0 += kAttnBlock) {
    // key j's values at kb + (j - b0) * ks, its V row at vb + (j - b0) * ks
    const float* kb = static_cast<const float*>(L.k) + (F16 ? 0 : b0 * L.key_stride + off);
    const float* vb = static_cast<const float*>(L.v) + (F16 ? 0 : b0 * L.key_stride + off);
    const int64_t ks = F16 ? hd : L.key_stride;
    if constexpr (F16) {
      const int64_t j0 = std::max(b0, lo_all), j1 = std::min(b0 + kAttnBlock - 1, hi_all);
      widen_block(L.k, L.key_stride, off, hd, j0, j1, kf + (j0 - b0) * hd);
      widen_block(L.v, L.key_stride, off, hd, j0, j1, vf + (j0 - b0) * hd);
      kb = kf;
      vb = vf;
    }
    for (int64_t r = 0; r < n_rows; ++r) {
      if (!rows[r].state) continue;
      const int64_t j_lo = std::max({b0, attn_first_key(L, rows[r].pos), c0});
      const int64_t j_hi = std::min({b0 + kAttnBlock - 1, rows[r].pos, c1});
      if (j_lo > j_hi) continue;
      const int64_t g_lo = (j_lo - b0) / 8, g_hi = (j_hi - b0) / 8;
      // Lanes of each group of 8 keys that the row does not see (the same for every head).
      __m256 hide[kAttnBlock / 8];
      for (int64_t g = g_lo; g <= g_hi; ++g) {
        const __m256i lane = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(b0 + 8 * g)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        hide[g] = _mm256_castsi256_ps(_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(j_lo)), lane),
                                                      _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(static_cast<int>(j_hi)))));
      }
      // The scores of up to kHeads heads first, then each head's softmax step and values: one head's
      // chain (scores -> max -> exp -> values) overlaps the next head's work.
      for (int64_t h0 = 0; h0 < G; h0 += kHeads) {
        const int64_t nh = std::min(kHeads, G - h0);
        __m256 s[kHeads][kAttnBlock / 8], mx[kHeads];
        for (int64_t h = 0; h < nh; ++h) {
          const float* q = rows[r].q + (kv_head * G + h0 + h) * hd;
          mx[h] = _mm256_set1_ps(-INFINITY);
          for (int64_t g = g_lo; g <= g_hi; ++g) {
            // Each key's dot is q[0:8] k[0:8], then the FMAs of the next 8 values in order; the 8 keys
            // advance together so that their 8 chains of FMAs overlap.
            const float* k8 = kb + 8 * g * ks;
            __m256 acc[8];
            const __m256 q0 = _mm256_loadu_ps(q);
            for (int u = 0; u < 8; ++u) acc[u] = _mm256_mul_ps(q0, _mm256_loadu_ps(k8 + u * ks));
            for (int64_t v = 1; v < vecs; ++v) {
              const __m256 qv = _mm256_loadu_ps(q + 8 * v);
              for (int u = 0; u < 8; ++u) acc[u] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k8 + u * ks + 8 * v), acc[u]);
            }
            s[h][g] = _mm256_blendv_ps(_mm256_mul_ps(reduce8(acc), _mm256_set1_ps(L.scale)), _mm256_set1_ps(-INFINITY), hide[g]);
            mx[h] = _mm256_max_ps(mx[h], s[h][g]);
          }
        }
        for (int64_t h = 0; h < nh; ++h) {
          float* const st = rows[r].state + (h0 + h) * sf;
          float* const so = st + 2;
          const float m_new = std::max(st[0], hmax(mx[h]));
          const float alpha = _mm256_cvtss_f32(exp8(_mm256_set1_ps(st[0] - m_new)));
          __m256 psum = _mm256_setzero_ps();
          for (int64_t g = g_lo; g <= g_hi; ++g) {
            const __m256 valid = _mm256_cmp_ps(s[h][g], _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ);
            const __m256 p = _mm256_and_ps(exp8(_mm256_sub_ps(s[h][g], _mm256_set1_ps(m_new))), valid);
            psum = _mm256_add_ps(psum, p);
            _mm256_store_ps(prob + 8 * g, p);
          }
          st[1] = st[1] * alpha + hsum(psum);
          st[0] = m_new;
          // o = o * alpha + sum of p_j V_j in key order, 64 values at a time in registers.
          const __m256 a = _mm256_set1_ps(alpha);
          for (int64_t v0 = 0; v0 < vecs; v0 += 8) {
            const int64_t nv = std::min<int64_t>(8, vecs - v0);
            __m256 o[8];
            for (int64_t v = 0; v < nv; ++v) o[v] = _mm256_mul_ps(_mm256_loadu_ps(so + 8 * (v0 + v)), a);
            for (int64_t j = j_lo; j <= j_hi; ++j) {
              const __m256 p = _mm256_set1_ps(prob[j - b0]);
              const float* vj = vb + (j - b0) * ks + 8 * v0;
              for (int64_t v = 0; v < nv; ++v) o[v] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vj + 8 * v), o[v]);
            }
            for (int64_t v = 0; v < nv; ++v) _mm256_storeu_ps(so + 8 * (v0 + v), o[v]);
          }
        }
      }
    }
  }
}

}  // namespace

void store_f16_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

void attend_chunk_avx2(const AttnLayer& L, const AttnRow* rows, int64_t n_rows, int64_t kv_head, int64_t c) {
  // The head sizes of the families (64: gpt-oss, Llama-class; 128: Qwen3, Mixtral) get unrolled
  // kernels; the same sums in the same order as the general one, so the same bytes.
  switch (L.head_dim) {
    case 64: return L.f16 ? chunk<true, 8>(L, rows, n_rows, kv_head, c) : chunk<false, 8>(L, rows, n_rows, kv_head, c);
    case 128: return L.f16 ? chunk<true, 16>(L, rows, n_rows, kv_head, c) : chunk<false, 16>(L, rows, n_rows, kv_head, c);
    default: return L.f16 ? chunk<true, 0>(L, rows, n_rows, kv_head, c) : chunk<false, 0>(L, rows, n_rows, kv_head, c);
  }
}

}  // namespace ts::cpu
