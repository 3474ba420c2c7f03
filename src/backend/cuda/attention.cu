// Attention: rotation and cache writes, split-KV decoding (one query row per sequence) and a
// tiled prefill kernel (many rows of a sequence share each K/V tile), with sliding windows and
// sinks. The cache holds halves; scores, softmax and sums are f32 in a fixed order (no atomics).
#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>

#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace ts::gpu {
namespace {

// RopeParams with the YaRN ramp precomputed on the host (model/rope semantics, rope_table.cpp).
struct RopeDev {
  bool on = false, neox = false, yarn = false;
  int n_rot = 0;
  double base = 10000, linear = 1, yarn_factor = 0, lo = 0, hi = 0, mscale = 1;
  const float* freq_factors = nullptr;
};

double yarn_corr_dim(double n_dims, double n_ctx_orig, double n_rot, double base) {
  return n_dims * std::log(n_ctx_orig / (n_rot * 2 * std::numbers::pi)) / (2 * std::log(base));
}

RopeDev rope_dev(const RopeParams* p) {
  RopeDev r;
  if (!p) return r;
  r.on = true;
  r.neox = p->layout == RopeParams::Layout::NeoX;
  r.n_rot = static_cast<int>(p->n_rot);
  r.base = p->base;
  r.linear = p->linear_factor;
  r.freq_factors = p->freq_factors;
  r.yarn = p->yarn_factor > 0;
  if (r.yarn) {
    const double d = static_cast<double>(p->n_rot);
    r.yarn_factor = p->yarn_factor;
    r.lo = std::max(0.0, std::floor(yarn_corr_dim(d, p->yarn_orig_ctx, p->yarn_beta_fast, p->base)));
    r.hi = std::min(d - 1, std::ceil(yarn_corr_dim(d, p->yarn_orig_ctx, p->yarn_beta_slow, p->base)));
    r.mscale = 1.0 + 0.1 * std::log(p->yarn_factor);
  }
  return r;
}

// The layer's K (kv = 0) or V (kv = 1) of kv head h in a sequence's cache.
__device__ __forceinline__ __half* cache_at(const DevSeq& s, int64_t layer, int kv, int64_t n_kv, int64_t h, int64_t hd) {
  return s.kv + (((layer * 2 + kv) * n_kv + h) * s.n_ctx) * hd;
}

// Each row's rotation, once per step (the angle of pair j from the row's position in double like
// CpuBackend's table): cos then sin of the n_rot/2 pairs, scaled, at angles + row * kRopeRowFloats.
// The layers then only read it: computed in every layer it took a third of their rotation's time.
__global__ void rope_angles_kernel(RopeDev r, StepDev st, float* angles) {
  const int half = r.n_rot / 2;
  const int64_t i = blockIdx.x;
  const int64_t pos = st.pos[i];
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    const double d = static_cast<double>(r.n_rot);
    double theta = static_cast<double>(pos) / r.linear * pow(r.base, -2.0 * j / d);
    if (r.freq_factors) theta /= r.freq_factors[j];
    if (r.yarn) {
      const double ramp = 1.0 - fmin(fmax((j - r.lo) / fmax(0.001, r.hi - r.lo), 0.0), 1.0);
      theta = theta / r.yarn_factor * (1 - ramp) + theta * ramp;
    }
    angles[i * kRopeRowFloats + j] = static_cast<float>(cos(theta) * r.mscale);
    angles[i * kRopeRowFloats + half + j] = static_cast<float>(sin(theta) * r.mscale);
  }
}

// The rotation of one step's rows: angles[row * kRopeRowFloats] holds cos then sin of the `half`
// pairs (null: no rotation); pair j is (j, j + half) in the NeoX layout, else (2j, 2j + 1).
struct RotateDev {
  const float* angles = nullptr;
  int half = 0;
  bool neox = false;
};
__device__ __forceinline__ int2 pair_dims(int j, const RotateDev& r) { return r.neox ? int2{j, j + r.half} : int2{2 * j, 2 * j + 1}; }
__device__ __forceinline__ float2 rotate_pair(float a0, float b0, const float* cs, int j, int half) {
  const float c = cs[j], s = cs[half + j];
  return float2{a0 * c - b0 * s, a0 * s + b0 * c};
}
// Dimension d of head row x after the rotation of row i (the value rope_store_kernel leaves there).
__device__ __forceinline__ float rotated(const float* x, int d, int64_t i, const RotateDev& r) {
  if (!r.angles || d >= 2 * r.half) return x[d];
  const int j = r.neox ? d % r.half : d / 2;
  const int2 ab = pair_dims(j, r);
  const float2 v = rotate_pair(x[ab.x], x[ab.y], r.angles + i * kRopeRowFloats, j, r.half);
  return d == ab.x ? v.x : v.y;
}

// Rows of several positions of a sequence (prefill): one block per row rotates q and k in place,
// then stores k and v as halves at the row's position. (Decoding rotates and stores in its attention
// kernel instead: one launch fewer per layer.)
__global__ void __launch_bounds__(1024) rope_store_kernel(float* q, float* k, const float* v, int64_t layer, int64_t n_head, int64_t n_kv,
                                                          int64_t hd, RotateDev r, StepDev st) {
  const int64_t i = blockIdx.x;
  const int64_t pos = st.pos[i];
  float* qi = q + i * n_head * hd;
  float* ki = k + i * n_kv * hd;
  if (r.angles) {
    for (int idx = threadIdx.x; idx < r.half * (n_head + n_kv); idx += blockDim.x) {
      const int j = idx % r.half;
      const int64_t h = idx / r.half;
      float* x = h < n_head ? qi + h * hd : ki + (h - n_head) * hd;
      const int2 ab = pair_dims(j, r);
      const float2 rv = rotate_pair(x[ab.x], x[ab.y], r.angles + i * kRopeRowFloats, j, r.half);
      x[ab.x] = rv.x;
      x[ab.y] = rv.y;
    }
    __syncthreads();
  }
  const DevSeq& s = st.seqs[st.seq[i]];
  for (int64_t e = threadIdx.x; e < n_kv * hd; e += blockDim.x) {
    const int64_t h = e / hd, d = e % hd;
    cache_at(s, layer, 0, n_kv, h, hd)[pos * hd + d] = __float2half_rn(ki[e]);
    cache_at(s, layer, 1, n_kv, h, hd)[pos * hd + d] = __float2half_rn(v[i * n_kv * hd + e]);
  }
}

// The keys row i attends to: [lo, pos].
__device__ __forceinline__ int64_t first_key(int64_t pos, int64_t window) { return window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0; }

struct AttnDev {
  int64_t n_head, n_kv, window;
  float scale;
  const float* sinks;
};

constexpr int kDecodeWarps = 4;

// Keys per split of a decode row: the keys shared out over the splits, but at least one tile per
// warp, so a short row (every row of a sliding-window layer of 128) is one split, which writes the
// output itself (no combine), rather than many splits of a few keys each. From the row's position
// alone, so its bytes are the input's.
__device__ __forceinline__ int64_t split_keys(int64_t n_keys, int splits) {
  const int64_t even = (n_keys + splits - 1) / splits;
  return even > kDecodeWarps * 32 ? even : kDecodeWarps * 32;
}

template <int HD>
constexpr int max_group() {
  return HD <= 64 ? 16 : (HD == 128 ? 8 : 4);
}

// Values are staged per warp in chunks of this many bytes (32 keys of 64 dimensions).
constexpr int kValueStageBytes = 4096;
template <int HD>
constexpr int value_chunk() {  // keys per staged chunk: a multiple of 4, at most a tile
  return kValueStageBytes / (HD * 2) < 32 ? kValueStageBytes / (HD * 2) : 32;
}

// Copies keys [k0, k0 + n) of V into a warp's stage with cp.async (no registers held while the bytes
// travel), 16 bytes per lane and copy.
template <int HD>
__device__ __forceinline__ void stage_values(__half* stage, const __half* V, int64_t k0, int n, int lane) {
  constexpr int U = HD / 8;  // 16-byte pieces per key
  for (int e = lane; e < n * U; e += 32) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(stage + e * 8));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(V + k0 * HD + e * 8));
  }
  asm volatile("cp.async.commit_group;\n" ::);
}

// Split-KV decoding: block (row, kv head, split) walks its share of the keys in tiles of 32, one key
// per lane for the scores and one dimension slice per lane for the values, with an online softmax
// per q head of the group; its 4 warps are merged in order and the split's (max, sum, acc) written.
// A tile's values are copied into shared memory while its scores are computed, so a tile costs one
// trip to memory, not one per 4 keys. GM: the model's q heads per kv head rounded up to a power of two.
// A row short enough for one split (every row of a sliding window of 128) has its q heads shared out
// over the split blocks instead, one head per block: each head's arithmetic is the same whichever
// block does it (the heads never meet), so the bytes are the one block's, in about an eighth of the
// time of one block walking every head. Each of those blocks stores the row's key and value itself
// (the same bytes) before it reads them.
template <int HD, int GM>
__global__ void __launch_bounds__(kDecodeWarps * 32) attn_decode_kernel(const float* q, const float* k, const float* v, RotateDev r,
                                                                        int64_t layer, AttnDev a, StepDev st, float* part, int splits,
                                                                        float* out) {
  constexpr int EPL = HD / 32;
  const int G = static_cast<int>(a.n_head / a.n_kv);
  const int64_t i = blockIdx.x, kvh = blockIdx.y;
  const int split = blockIdx.z, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __shared__ float qs[GM][HD];
  __shared__ float wm[kDecodeWarps][GM], wl[kDecodeWarps][GM];
  __shared__ float wacc[kDecodeWarps][GM][HD];
  __shared__ float4 ps[kDecodeWarps][GM][8];  // the tile's weights p: [warp][head][key / 4]
  __shared__ __align__(16) __half vstage[kDecodeWarps][kValueStageBytes / 2];
  constexpr int VC = value_chunk<HD>();
  const DevSeq& s = st.seqs[st.seq[i]];
  const int64_t pos = st.pos[i], lo = first_key(pos, a.window), n_keys = pos - lo + 1;
  const int64_t chunk = split_keys(n_keys, splits);
  const bool alone = chunk >= n_keys;  // one split holds every key and writes the output
  const bool by_head = alone && static_cast<int>(gridDim.z) >= G;
  if (alone && split >= (by_head ? G : 1)) return;
  // The q heads of the group this block computes: [h0, h1).
  const int h0 = by_head ? split : 0, h1 = by_head ? split + 1 : G;
  const int64_t k0 = alone ? lo : lo + split * chunk, k1 = pos + 1 < k0 + chunk ? pos + 1 : k0 + chunk;
  __half* K = cache_at(s, layer, 0, a.n_kv, kvh, HD);
  __half* V = cache_at(s, layer, 1, a.n_kv, kvh, HD);
  // Every split rotates its q heads for itself; the split holding the row's own position rotates its
  // key and stores it and the value first (no other split reads that position this step; a one-split
  // row's head blocks each store the same bytes and read their own).
  for (int e = h0 * HD + threadIdx.x; e < h1 * HD; e += blockDim.x)
    qs[e / HD][e % HD] = rotated(q + (i * a.n_head + kvh * G + e / HD) * HD, e % HD, i, r);
  if (k0 <= pos && pos < k1)
    for (int d = threadIdx.x; d < HD; d += blockDim.x) {
      K[pos * HD + d] = __float2half_rn(rotated(k + (i * a.n_kv + kvh) * HD, d, i, r));
      V[pos * HD + d] = __float2half_rn(v[(i * a.n_kv + kvh) * HD + d]);
    }
  __syncthreads();
  float m[GM], l[GM], acc[GM][EPL];
#pragma unroll
  for (int g = 0; g < GM; ++g) {
    m[g] = -INFINITY;
    l[g] = 0;
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[g][e] = 0;
  }
  for (int64_t t0 = k0 + warp * 32; t0 < k1; t0 += kDecodeWarps * 32) {
    const int64_t key = t0 + lane;
    const bool valid = key < k1;
    const int n_here = static_cast<int>(k1 - t0 < 32 ? k1 - t0 : 32);
    stage_values<HD>(vstage[warp], V, t0, n_here < VC ? n_here : VC, lane);
    float sc[GM];
#pragma unroll
    for (int g = 0; g < GM; ++g) sc[g] = 0;
    if (valid) {
      const uint4* kr = reinterpret_cast<const uint4*>(K + key * HD);
#pragma unroll
      for (int c = 0; c < HD / 8; ++c) {
        const uint4 raw = kr[c];
        const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
        float kf[8];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const float2 f = __half22float2(h2[u]);
          kf[2 * u] = f.x;
          kf[2 * u + 1] = f.y;
        }
#pragma unroll
        for (int g = 0; g < GM; ++g)
          if (g >= h0 && g < h1)
#pragma unroll
            for (int u = 0; u < 8; ++u) sc[g] = fmaf(qs[g][8 * c + u], kf[u], sc[g]);
      }
    }
    float p[GM];
#pragma unroll
    for (int g = 0; g < GM; ++g) {
      if (g < h0 || g >= h1) continue;
      const float sv = valid ? sc[g] * a.scale : -INFINITY;
      const float mn = fmaxf(m[g], warp_max(sv));
      const float corr = m[g] == -INFINITY ? 0.0f : expf(m[g] - mn);
      p[g] = valid ? expf(sv - mn) : 0.0f;
      l[g] = l[g] * corr + warp_sum(p[g]);
#pragma unroll
      for (int e = 0; e < EPL; ++e) acc[g][e] *= corr;
      m[g] = mn;
    }
    // Each head's weights of the tile's keys go through shared memory, so that one broadcast read
    // gives four keys' (a shuffle per head and key did); the sums keep their key order.
#pragma unroll
    for (int g = 0; g < GM; ++g)
      if (g >= h0 && g < h1) reinterpret_cast<float*>(ps[warp][g])[lane] = p[g];
    for (int j4 = 0; j4 < n_here; j4 += 4) {
      if (j4 % VC == 0) {  // the chunk from j4 is in the stage (the first was copied with the keys)
        if (j4 > 0) {
          __syncwarp();  // the previous chunk has been read
          stage_values<HD>(vstage[warp], V, t0 + j4, n_here - j4 < VC ? n_here - j4 : VC, lane);
        }
        asm volatile("cp.async.wait_all;\n" ::);
        __syncwarp();  // every lane's copies landed; at j4 = 0 also every lane's weights in ps
      }
      const int nj = n_here - j4 < 4 ? n_here - j4 : 4;
      float vf[4][EPL];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const __half* vr = vstage[warp] + (j4 % VC + u) * HD + lane * EPL;
#pragma unroll
        for (int e = 0; e < EPL; ++e) vf[u][e] = __half2float(vr[e]);
      }
#pragma unroll
      for (int g = 0; g < GM; ++g) {
        if (g < h0 || g >= h1) continue;
        const float4 p4 = ps[warp][g][j4 / 4];
        const float pj[4] = {p4.x, p4.y, p4.z, p4.w};
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (u < nj)
#pragma unroll
            for (int e = 0; e < EPL; ++e) acc[g][e] = fmaf(pj[u], vf[u][e], acc[g][e]);
      }
    }
    __syncwarp();  // the next tile rewrites ps
  }
  if (lane == 0)
#pragma unroll
    for (int g = 0; g < GM; ++g)
      if (g >= h0 && g < h1) {
        wm[warp][g] = m[g];
        wl[warp][g] = l[g];
      }
#pragma unroll
  for (int g = 0; g < GM; ++g)
    if (g >= h0 && g < h1)
#pragma unroll
      for (int e = 0; e < EPL; ++e) wacc[warp][g][lane * EPL + e] = acc[g][e];
  __syncthreads();
  // Merge the warps in order; one thread per (q head of the group, dimension).
  for (int e = h0 * HD + threadIdx.x; e < h1 * HD; e += blockDim.x) {
    const int g = e / HD, d = e % HD;
    float M = -INFINITY;
    for (int w = 0; w < kDecodeWarps; ++w) M = fmaxf(M, wm[w][g]);
    float L = 0, A = 0;
    for (int w = 0; w < kDecodeWarps; ++w) {
      const float f = wm[w][g] == -INFINITY ? 0.0f : expf(wm[w][g] - M);
      L += wl[w][g] * f;
      A += wacc[w][g][d] * f;
    }
    const int64_t h = kvh * G + g;
    if (alone) {  // attn_combine_kernel's arithmetic for one split
      const float Mx = fmaxf(a.sinks ? a.sinks[h] : -INFINITY, M), w = M != -INFINITY ? expf(M - Mx) : 0.0f;
      float Ls = a.sinks ? expf(a.sinks[h] - Mx) : 0.0f, As = 0;
      if (M != -INFINITY) {
        Ls += L * w;
        As += A * w;
      }
      out[i * a.n_head * HD + h * HD + d] = As / Ls;
      continue;
    }
    float* dst = part + ((i * a.n_head + h) * splits + split) * (HD + 2);
    if (d == 0) {
      dst[0] = M;
      dst[1] = L;
    }
    dst[2 + d] = A;
  }
}

// The splits of (row, head) in order, with the sink as one more logit in the denominator. The
// splits' maxima and sums are loaded by all threads at once into shared memory, and their weights
// computed once (a thread walking 33 splits' loads in sequence was most of this kernel's time).
constexpr int kMaxSplits = 64;  // decode_splits' cap
__global__ void attn_combine_kernel(const float* part, int splits, int64_t hd, AttnDev a, StepDev st, float* out) {
  __shared__ float ms[kMaxSplits], ls[kMaxSplits], ws[kMaxSplits];
  const int64_t i = blockIdx.x, h = blockIdx.y;
  const int64_t pos = st.pos[i], n_keys = pos - first_key(pos, a.window) + 1;
  if (split_keys(n_keys, splits) >= n_keys) return;  // one split: the decode kernel wrote the row
  const float* p = part + (i * a.n_head + h) * splits * (hd + 2);
  for (int s = threadIdx.x; s < splits; s += blockDim.x) {
    ms[s] = p[s * (hd + 2)];
    ls[s] = p[s * (hd + 2) + 1];
  }
  __syncthreads();
  float M = a.sinks ? a.sinks[h] : -INFINITY;
  for (int s = 0; s < splits; ++s) M = fmaxf(M, ms[s]);
  for (int s = threadIdx.x; s < splits; s += blockDim.x) ws[s] = ms[s] != -INFINITY ? expf(ms[s] - M) : 0.0f;
  __syncthreads();
  float L = a.sinks ? expf(a.sinks[h] - M) : 0.0f;
  for (int s = 0; s < splits; ++s)
    if (ms[s] != -INFINITY) L += ls[s] * ws[s];
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float A = 0;
#pragma unroll 8
    for (int s = 0; s < splits; ++s)
      if (ms[s] != -INFINITY) A += p[s * (hd + 2) + 2 + d] * ws[s];
    out[i * a.n_head * hd + h * hd + d] = A / L;
  }
}

// Prefill: block (row tile, sequence, kv head); thread = (row, q head of the group, 32-dim slice);
// K/V tiles of 32 keys in shared memory are shared by every row of the tile. Online softmax per
// thread group, the sink as the initial (max, sum) = (sink, 1).
constexpr int kKeyTile = 32, kPrefillThreads = 256;
template <int HD>
__global__ void __launch_bounds__(kPrefillThreads) attn_prefill_kernel(const float* q, int64_t layer, AttnDev a, StepDev st,
                                                                       float* out, int rows_per_tile) {
  constexpr int TD = HD / 32;  // threads per q vector
  const int G = static_cast<int>(a.n_head / a.n_kv);
  __shared__ __half ks[kKeyTile][HD], vs[kKeyTile][HD];
  const DevSeq& s = st.seqs[blockIdx.y];
  const int64_t kvh = blockIdx.z;
  const int tid = threadIdx.x, part = tid % TD, g = (tid / TD) % G, r = tid / (TD * G);
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * rows_per_tile;
  if (r0 >= s.n) return;  // block-uniform
  const bool active = r < rows_per_tile && r0 + r < s.n;
  const int64_t row = s.row0 + r0 + r;
  const int64_t pos = active ? s.pos0 + r0 + r : 0, lo = first_key(pos, a.window);
  // Keys the tile needs: from the first row's window start to the last row's position.
  const int64_t last = (s.n < r0 + rows_per_tile ? s.n : r0 + rows_per_tile) - 1;
  const int64_t kmin = first_key(s.pos0 + r0, a.window), kmax = s.pos0 + last;
  const int64_t h = kvh * G + g;
  float qv[32], acc[32];
#pragma unroll
  for (int d = 0; d < 32; ++d) {
    qv[d] = active ? q[row * a.n_head * HD + h * HD + part * 32 + d] : 0.0f;
    acc[d] = 0;
  }
  float m = a.sinks ? a.sinks[h] : -INFINITY, l = a.sinks ? 1.0f : 0.0f;
  const __half* K = cache_at(s, layer, 0, a.n_kv, kvh, HD);
  const __half* V = cache_at(s, layer, 1, a.n_kv, kvh, HD);
  for (int64_t t0 = kmin; t0 <= kmax; t0 += kKeyTile) {
    const int n_keys = static_cast<int>(kmax + 1 - t0 < kKeyTile ? kmax + 1 - t0 : kKeyTile);
    __syncthreads();
    for (int e = tid; e < n_keys * HD / 8; e += blockDim.x) {
      const int key = e / (HD / 8), c = e % (HD / 8);
      reinterpret_cast<uint4*>(&ks[key][0])[c] = reinterpret_cast<const uint4*>(K + (t0 + key) * HD)[c];
      reinterpret_cast<uint4*>(&vs[key][0])[c] = reinterpret_cast<const uint4*>(V + (t0 + key) * HD)[c];
    }
    __syncthreads();
    // Every thread computes every tile (masked), so the shuffles below always have the full warp.
    float sc[kKeyTile];
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kKeyTile; ++j) {
      float d = 0;
      if (j < n_keys) {
#pragma unroll
        for (int e = 0; e < 32; e += 2) {
          const float2 kf = __half22float2(*reinterpret_cast<const __half2*>(&ks[j][part * 32 + e]));
          d = fmaf(qv[e], kf.x, d);
          d = fmaf(qv[e + 1], kf.y, d);
        }
      }
#pragma unroll
      for (int o = 1; o < TD; o <<= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
      const int64_t key = t0 + j;
      sc[j] = j < n_keys && key >= lo && key <= pos ? d * a.scale : -INFINITY;
      tile_max = fmaxf(tile_max, sc[j]);
    }
    const float mn = fmaxf(m, tile_max);
    const float corr = m == -INFINITY ? 0.0f : expf(m - mn);
    l *= corr;
#pragma unroll
    for (int d = 0; d < 32; ++d) acc[d] *= corr;
#pragma unroll
    for (int j = 0; j < kKeyTile; ++j) {
      if (sc[j] == -INFINITY) continue;
      const float p = expf(sc[j] - mn);
      l += p;
#pragma unroll
      for (int e = 0; e < 32; e += 2) {
        const float2 vf = __half22float2(*reinterpret_cast<const __half2*>(&vs[j][part * 32 + e]));
        acc[e] = fmaf(p, vf.x, acc[e]);
        acc[e + 1] = fmaf(p, vf.y, acc[e + 1]);
      }
    }
    m = mn;
  }
  if (!active) return;
  const float inv = 1.0f / l;
#pragma unroll
  for (int d = 0; d < 32; ++d) out[row * a.n_head * HD + h * HD + part * 32 + d] = acc[d] * inv;
}

int decode_splits(const AttentionParams& p) {
  // Enough blocks for the whole chip with one row whatever the depth. The count depends on the model
  // alone: not on the positions (a recorded step replays it), and not on how many rows share the step,
  // since the splits decide the order of a row's sums (a sequence decoded beside others keeps the
  // bytes it gets alone).
  return static_cast<int>(std::min<int64_t>(kMaxSplits, std::max<int64_t>(1, ceil_div(264, p.n_head_kv))));
}

bool decode_shape(const StepDev& st) { return st.max_seq_rows == 1; }

AttnDev attn_dev(const AttentionParams& p) { return AttnDev{p.n_head, p.n_head_kv, p.window, p.scale, p.sinks}; }

// Calls launch.operator()<HD>() for the head sizes the kernels are compiled for.
template <class L>
void with_head_dim(int64_t hd, L& launch) {
  switch (hd) {
    case 32: launch.template operator()<32>(); break;
    case 64: launch.template operator()<64>(); break;
    case 128: launch.template operator()<128>(); break;
    case 256: launch.template operator()<256>(); break;
    default: fail_text("the CUDA backend supports head sizes 32, 64, 128 and 256, not " + std::to_string(hd));
  }
}

}  // namespace

void rope_angles(const RopeParams& rope, const StepDev& st, float* angles, cudaStream_t s) {
  if (rope.n_rot > kRopeRowFloats)
    fail_text("the CUDA backend rotates at most " + std::to_string(kRopeRowFloats) + " dimensions per head; this model rotates " +
              std::to_string(rope.n_rot));
  rope_angles_kernel<<<st.n_rows, static_cast<unsigned>(std::max<int64_t>(32, rope.n_rot / 2)), 0, s>>>(rope_dev(&rope), st, angles);
  check_launch("rope_angles");
}

int64_t attention_scratch_floats(const AttentionParams& p, const StepDev& st) {
  return decode_shape(st) ? static_cast<int64_t>(st.n_rows) * p.n_head * decode_splits(p) * (p.head_dim + 2) : 0;
}

void attention(float* q, float* k, const float* v, int64_t layer, const AttentionParams& p, const StepDev& st, const float* angles,
               float* scratch, float* out, cudaStream_t s) {
  const AttnDev a = attn_dev(p);
  RotateDev r;
  if (p.rope) r = RotateDev{angles, static_cast<int>(p.rope->n_rot / 2), p.rope->layout == RopeParams::Layout::NeoX};
  const int64_t G = p.n_head / p.n_head_kv;
  if (p.n_head % p.n_head_kv != 0) fail_text("attention: the heads do not divide into the kv heads");
  if (decode_shape(st)) {
    const int splits = decode_splits(p);
    const dim3 grid(st.n_rows, static_cast<unsigned>(p.n_head_kv), splits);
    auto launch = [&]<int HD>() {
      if (G > max_group<HD>())
        fail_text("the CUDA decode attention takes at most " + std::to_string(max_group<HD>()) + " q heads per kv head at head size " +
                  std::to_string(HD));
      // The group's arrays sized for the model's group (a power of two), not the largest: registers
      // for heads a model does not have cap how many blocks fit on a multiprocessor.
      const int gm = static_cast<int>(std::bit_ceil(static_cast<uint64_t>(G)));
      auto with_group = [&]<int GM>() {
        if constexpr (GM <= max_group<HD>())
          if (gm == GM) attn_decode_kernel<HD, GM><<<grid, kDecodeWarps * 32, 0, s>>>(q, k, v, r, layer, a, st, scratch, splits, out);
      };
      with_group.template operator()<1>();
      with_group.template operator()<2>();
      with_group.template operator()<4>();
      with_group.template operator()<8>();
      with_group.template operator()<16>();
    };
    with_head_dim(p.head_dim, launch);
    check_launch("attn_decode");
    attn_combine_kernel<<<dim3(st.n_rows, static_cast<unsigned>(p.n_head)), 64, 0, s>>>(scratch, splits, p.head_dim, a, st, out);
    check_launch("attn_combine");
    return;
  }
  rope_store_kernel<<<st.n_rows, 1024, 0, s>>>(q, k, v, layer, p.n_head, p.n_head_kv, p.head_dim, r, st);
  check_launch("rope_store");
  const int64_t per_row = G * (p.head_dim / 32);
  if (per_row > kPrefillThreads)
    fail_text("attention: " + std::to_string(G) + " q heads per kv head at head size " + std::to_string(p.head_dim) + " exceed one block");
  const int rows_per_tile = static_cast<int>(kPrefillThreads / per_row);
  const dim3 grid(static_cast<unsigned>(ceil_div(st.max_seq_rows, rows_per_tile)), st.n_seqs, static_cast<unsigned>(p.n_head_kv));
  auto launch = [&]<int HD>() { attn_prefill_kernel<HD><<<grid, kPrefillThreads, 0, s>>>(q, layer, a, st, out, rows_per_tile); };
  with_head_dim(p.head_dim, launch);
  check_launch("attn_prefill");
}

}  // namespace ts::gpu
