// Products of weight rows with a few activation rows (decode, small batches, routed experts one
// (token, rank) at a time). A block stages the activations in shared memory (16-bit integers for
// the quantized formats, f32 for F32/F16/BF16: quant_dot.cuh) and each warp takes two weight rows
// at a time: its lanes walk the rows'
// 16-byte units, so a warp reads 512 contiguous bytes of each row per step. Each output is one
// warp's fixed-order sum: the bytes do not depend on the grid.
#include <type_traits>

#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/quant_dot.cuh"
#include "backend/cuda/route.cuh"

namespace ts::gpu {
namespace {

constexpr int kWarps = 4;

int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    TS_CUDA(cudaGetDevice(&dev));
    TS_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    return v;
  }();
  return n;
}

// Columns staged per chunk: 16 KiB of activations per token row at NT = 1.
template <int NT>
constexpr int chunk_cols() {
  return NT == 1 ? 4096 : 2048;
}

// What a kernel computes, per "pair" of weight rows (a warp's unit of work).
struct DenseJob {  // matvec: rows of up to kMaxOuts matrices, each output row y = x w (+ b) (+ y)
  MatOut outs[kMaxOuts];
  int n_outs;
  int64_t pair_begin[kMaxOuts + 1];
  int n;  // tokens
  __device__ const DenseJob& bind() const { return *this; }
  __device__ bool skip() const { return false; }
  __device__ const float* x_rows(const float* x, int64_t) const { return x; }
  __device__ int find(int64_t p) const {
    int j = 0;
    while (j + 1 < n_outs && p >= pair_begin[j + 1]) ++j;
    return j;
  }
  __device__ void rows(int64_t p, const uint8_t* (&r)[2]) const {
    const MatOut& o = outs[find(p)];
    const int64_t row = 2 * (p - pair_begin[find(p)]);
    r[0] = o.w.data + row * o.w.stride;
    r[1] = row + 1 < o.w.rows ? r[0] + o.w.stride : nullptr;
  }
  // acc[i][t] is token t0 + t's.
  template <int NT>
  __device__ void store(int64_t p, const float (&acc)[2][NT], int t0 = 0) const {
    const int j = find(p);
    const MatOut& o = outs[j];
    const int64_t row = 2 * (p - pair_begin[j]);
    for (int i = 0; i < 2 && row + i < o.w.rows; ++i)
      for (int t = 0; t < NT && t0 + t < n; ++t) {
        float v = acc[i][t];
        if (o.bias) v += o.bias[row + i];
        float* y = o.y + (t0 + t) * o.ldy + row + i;
        *y = o.accumulate ? *y + v : v;
      }
  }
};

// The routed-expert jobs: bind() reads the block's expert entry once (two dependent global loads),
// before the rounds rather than in each.
struct GateUpJob {  // routed experts: pair j = (gate row j, up row j) of the pair's expert
  MoeDev m;
  const int32_t* experts;
  float* act;  // [n*k][n_ff]
  RouteHere route;
  ExpertDev e;  // the block's expert, set by bind()
  __device__ GateUpJob bind() const {
    GateUpJob b = *this;
    b.e = m.table[route.logits ? routed_here() : experts[blockIdx.y]];
    return b;
  }
  // The block's expert, routed by its first warp from the router's logits (route.cuh: the routing
  // kernel's code, so the same choice); one block per token also writes the routing for the down
  // products and the combine. Saves the routing kernel's launch in a decode step.
  __device__ int32_t routed_here() const {
    __shared__ int32_t sel[kPerLane];
    __shared__ float w[kPerLane];
    const int64_t t = blockIdx.y / m.k, r = blockIdx.y % m.k;
    const bool writes = blockIdx.x == 0 && r == 0;
    if (threadIdx.x < 32)
      route_token(route.logits + t * m.n_expert, route.bias, static_cast<int>(m.n_expert), static_cast<int>(m.k), route.contract,
                  sel, writes ? w : nullptr);
    __syncthreads();
    if (writes && threadIdx.x < m.k) {
      route.experts[t * m.k + threadIdx.x] = sel[threadIdx.x];
      route.weights[t * m.k + threadIdx.x] = w[threadIdx.x];
    }
    return sel[r];
  }
  __device__ bool skip() const { return !e.gate; }  // another wave's expert
  __device__ const float* x_rows(const float* x, int64_t ldx) const { return x + blockIdx.y / m.k * ldx; }
  __device__ void rows(int64_t j, const uint8_t* (&r)[2]) const {
    r[0] = e.gate + j * m.gate_stride;
    r[1] = e.up + j * m.gate_stride;
  }
  template <int NT>
  __device__ void store(int64_t j, const float (&acc)[2][NT]) const {
    const float g = acc[0][0] + (e.gate_bias ? e.gate_bias[j] : 0.0f);
    const float u = acc[1][0] + (e.up_bias ? e.up_bias[j] : 0.0f);
    act[blockIdx.y * m.n_ff + j] = glu_value(m.act, g, u);
  }
};

struct DownJob {  // routed experts: rows 2p, 2p+1 of the pair's expert's down matrix
  MoeDev m;
  const int32_t* experts;
  float* slots;  // [n*k][n_embd]
  ExpertDev e;   // the block's expert, set by bind()
  __device__ DownJob bind() const {
    DownJob b = *this;
    b.e = m.table[experts[blockIdx.y]];
    return b;
  }
  __device__ bool skip() const { return !e.gate; }
  __device__ const float* x_rows(const float* x, int64_t ldx) const { return x + blockIdx.y * ldx; }
  __device__ void rows(int64_t p, const uint8_t* (&r)[2]) const {
    r[0] = e.down + 2 * p * m.down_stride;
    r[1] = 2 * p + 1 < m.n_embd ? r[0] + m.down_stride : nullptr;
  }
  template <int NT>
  __device__ void store(int64_t p, const float (&acc)[2][NT]) const {
    for (int i = 0; i < 2 && 2 * p + i < m.n_embd; ++i)
      slots[blockIdx.y * m.n_embd + 2 * p + i] = acc[i][0] + (e.down_bias ? e.down_bias[2 * p + i] : 0.0f);
  }
};

// Stages columns [c0, c0 + len) of the NT f32 activation rows (zeros past n_valid). Starts and ends
// with a barrier.
template <int NT>
__device__ void stage_x(const float* x, int64_t ldx, int n_valid, int64_t c0, int len, float4* xs) {
  constexpr int CH = chunk_cols<NT>();
  __syncthreads();
  for (int i = threadIdx.x; i < NT * (len / 4); i += blockDim.x) {
    const int t = i / (len / 4), c = i % (len / 4);
    xs[t * (CH / 4) + swz(c)] = t < n_valid ? *reinterpret_cast<const float4*>(x + t * ldx + c0 + 4 * c) : make_float4(0, 0, 0, 0);
  }
  __syncthreads();
}

// Stages columns [c0, c0 + len) of the NT activation rows for F's int8 products (QView; zeros past
// n_valid): per 32 values d = amax / 32639 and q = rint(x / d), split as h = (q + 128) >> 8 and
// l = q - 256 h, and (F::kSums) the sums of q per 16 values. Starts and ends with a barrier.
template <class F, int NT>
__device__ void stage_q(const float* x, int64_t ldx, int n_valid, int64_t c0, int len, uint4* q, int2* qs, float* d) {
  constexpr int CH = chunk_cols<NT>(), V = F::kValues, P = V / 8, UC = CH / V;
  __syncthreads();
  const int groups = len / 32;
  for (int i = threadIdx.x; i < NT * groups; i += blockDim.x) {
    const int t = i / groups, g = i % groups;
    float v[32];
    const float4* src = reinterpret_cast<const float4*>(x + t * ldx + c0 + 32 * g);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float4 f = t < n_valid ? src[j] : make_float4(0, 0, 0, 0);
      v[4 * j] = f.x;
      v[4 * j + 1] = f.y;
      v[4 * j + 2] = f.z;
      v[4 * j + 3] = f.w;
    }
    float amax = 0;
#pragma unroll
    for (int j = 0; j < 32; ++j) amax = fmaxf(amax, fabsf(v[j]));
    const float inv = amax > 0 ? 32639.0f / amax : 0.0f;
    d[t * (CH / 32) + g] = amax / 32639.0f;
    uint32_t hw[8] = {}, lw[8] = {};
    int2 sum = {0, 0};
#pragma unroll
    for (int b = 0; b < 32; ++b) {
      const int j = b / V * V + F::qval(b % V);
      const int qi = __float2int_rn(v[j] * inv);
      if (j < 16) sum.x += qi;
      else sum.y += qi;
      const int h = (qi + 128) >> 8, l = qi - 256 * h;
      hw[b / 4] |= static_cast<uint32_t>(h & 0xFF) << (8 * (b % 4));
      lw[b / 4] |= static_cast<uint32_t>(l & 0xFF) << (8 * (b % 4));
    }
#pragma unroll
    for (int k = 0; k < 32 / V; ++k)
#pragma unroll
      for (int p = 0; p < V / 16; ++p) {
        const int u = g * (32 / V) + k, w = k * (V / 4) + 4 * p;
        q[(t * P + p) * UC + u] = make_uint4(hw[w], hw[w + 1], hw[w + 2], hw[w + 3]);
        q[(t * P + V / 16 + p) * UC + u] = make_uint4(lw[w], lw[w + 1], lw[w + 2], lw[w + 3]);
      }
    if constexpr (F::kSums) qs[t * (CH / 32) + g] = sum;
  }
  __syncthreads();
}

// Token t's view of the staged chunk and the staging itself, for F's kind of activations. The int8
// kind keeps its bytes (2 per value) and sums in xs (4 bytes per value) and its scales in xd.
template <class F>
using ViewOf = std::conditional_t<Int8Dot<F>, QView, XView>;
template <int NT>
__device__ int2* staged_sums(float4* xs) {
  return reinterpret_cast<int2*>(reinterpret_cast<uint4*>(xs) + NT * chunk_cols<NT>() / 8);
}
template <class F, int NT>
__device__ ViewOf<F> view(float4* xs, float* xd, int t) {
  constexpr int CH = chunk_cols<NT>();
  if constexpr (Int8Dot<F>)
    return QView{reinterpret_cast<const uint4*>(xs) + t * (CH / 8), xd + t * (CH / 32), staged_sums<NT>(xs) + t * (CH / 32), CH / F::kValues};
  else return XView{xs + t * (CH / 4)};
}
// Unit 0 of every format's view, all zeros: a product with it adds +0 or -0 to a sum, which leaves
// the sum's bits unchanged (sums start at +0 and so never become -0).
template <class F>
__device__ ViewOf<F> zero_view(const uint4 (&z)[8]) {
  if constexpr (Int8Dot<F>) return QView{z, reinterpret_cast<const float*>(z + 4), reinterpret_cast<const int2*>(z + 5), 1};
  else return XView{reinterpret_cast<const float4*>(z)};
}
template <GgmlType T, int NT>
__device__ void stage(const float* x, int64_t ldx, int n_valid, int64_t c0, int len, float4* xs, float* xd) {
  using F = Fmt<T>;
  if constexpr (Int8Dot<F>) stage_q<F, NT>(x, ldx, n_valid, c0, len, reinterpret_cast<uint4*>(xs), staged_sums<NT>(xs), xd);
  else stage_x<NT>(x, ldx, n_valid, c0, len, xs);
}

// The kernel shared by every job: rounds of one pair per warp (block-uniform trip counts, so the
// barriers of multi-chunk rows line up), chunks of staged activations, two rows per warp.
template <GgmlType T, int NT, class Job>
__global__ void __launch_bounds__(kWarps * 32) mv_kernel(Job unbound, const float* x, int64_t ldx, int n_valid, int64_t cols,
                                                          int64_t pairs) {
  using F = Fmt<T>;
  constexpr int CH = chunk_cols<NT>(), V = F::kValues;
  __shared__ float4 xs[NT * CH / 4];
  __shared__ float xd[NT * CH / 32];
  const auto& job = unbound.bind();
  if (job.skip()) return;  // the whole block: its pair's expert is not in this call's table
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const RowLayout L = row_layout(T, cols);
  x = job.x_rows(x, ldx);  // the routed-expert jobs: the row of the block's (token, rank) pair
  ViewOf<F> xv[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) xv[t] = view<F, NT>(xs, xd, t);
  __shared__ uint4 zeros[8];
  if (F::kFlat && threadIdx.x < 8) zeros[threadIdx.x] = make_uint4(0, 0, 0, 0);  // read after stage's barriers
  const ViewOf<F> zv = zero_view<F>(zeros);
  const bool one_chunk = cols <= CH;
  if (one_chunk) stage<T, NT>(x, ldx, n_valid, 0, static_cast<int>(cols), xs, xd);
  const int64_t per_round = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t rounds = (pairs + per_round - 1) / per_round;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t p = (round * gridDim.x + blockIdx.x) * kWarps + warp;
    const bool valid = p < pairs;
    const uint8_t* r[2] = {nullptr, nullptr};
    if (valid) job.rows(p, r);
    float acc[2][NT] = {};
    for (int64_t c0 = 0; c0 < cols; c0 += CH) {
      const int len = static_cast<int>(cols - c0 < CH ? cols - c0 : CH);
      if (!one_chunk) stage<T, NT>(x, ldx, n_valid, c0, len, xs, xd);
      if (!valid) continue;
      const int units = len / V;
      const int64_t u0 = c0 / V;
      // Two units per lane per step, loads first. Where a load sits behind a branch, ptxas may sink
      // it below the other row's arithmetic: two trips to memory per step where one is meant, which
      // the Q8_0 products (q/k/v, the output projection, the head) did. Their step (F::kFlat) has
      // nothing conditional: a missing second row reloads the first (its sums are never stored), a
      // missing second unit reloads the first and meets the zero view, adding only zeros. Formats
      // whose decoding dominates (MXFP4) keep the branches, which skip the tail's second units:
      // flat, their expert products were 5-15% slower (docs/CUDA_LOG.md).
      constexpr bool flat = F::kFlat;
      const uint8_t* r1 = r[1] || !flat ? r[1] : r[0];
      for (int ul = lane; ul < units; ul += 64) {
        const bool second = ul + 32 < units, real = second || !flat;  // real: unit u2 is the row's
        const int u2 = real ? ul + 32 : ul;
        decltype(F::load(r[0], L, 0)) a0 = F::load(r[0], L, u0 + ul), b0{}, a1{}, b1{};
        if (flat || r1) b0 = F::load(r1, L, u0 + ul);
        if (flat || second) {
          a1 = F::load(r[0], L, u0 + u2);
          if (flat || r1) b1 = F::load(r1, L, u0 + u2);
        }
        ViewOf<F> x2[NT];
#pragma unroll
        for (int t = 0; t < NT; ++t) x2[t] = real ? xv[t] : zv;
        F::template dot<NT>(a0, xv, ul, acc[0]);
        if (flat || r1) F::template dot<NT>(b0, xv, ul, acc[1]);
        if (flat || second) {
          F::template dot<NT>(a1, x2, real ? u2 : 0, acc[0]);
          if (flat || r1) F::template dot<NT>(b1, x2, real ? u2 : 0, acc[1]);
        }
      }
    }
    if (!valid) continue;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[i][t] = warp_sum(acc[i][t]);
    if (lane == 0) job.template store<NT>(p, acc);
  }
}

// Few row pairs (a router's 32 rows): mv_kernel would give each pair one warp, leaving most of the
// device idle while each warp walks its rows' units in sequence. Here block (pair, token) takes one
// pair for one token and its warps split the units, every lane loading all of its units before using
// them; the warps' sums are added in a fixed order. Every token of a step takes this kernel, so a
// token's bytes do not depend on how many share the step.
constexpr int kSplitWarps = 8, kSplitUnits = 4;
template <GgmlType T, class Job>
__global__ void __launch_bounds__(kSplitWarps * 32) mv_split_kernel(Job unbound, const float* x, int64_t ldx, int64_t cols) {
  using F = Fmt<T>;
  constexpr int CH = chunk_cols<1>(), V = F::kValues;
  __shared__ float4 xs[CH / 4];
  __shared__ float xd[CH / 32];
  __shared__ float part[kSplitWarps][2];
  const auto& job = unbound.bind();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t p = blockIdx.x;
  const int token = static_cast<int>(blockIdx.y);
  const RowLayout L = row_layout(T, cols);
  const uint8_t* r[2] = {nullptr, nullptr};
  job.rows(p, r);
  stage<T, 1>(x + token * ldx, ldx, 1, 0, static_cast<int>(cols), xs, xd);
  const ViewOf<F> xv[1] = {view<F, 1>(xs, xd, 0)};
  const int units = static_cast<int>(cols / V);
  float acc[2][1] = {};
  for (int ul = threadIdx.x; ul < units; ul += kSplitWarps * 32 * kSplitUnits) {
    decltype(F::load(r[0], L, 0)) a[kSplitUnits]{}, b[kSplitUnits]{};
#pragma unroll
    for (int u = 0; u < kSplitUnits; ++u) {
      const int uu = ul + u * kSplitWarps * 32;
      if (uu >= units) break;
      a[u] = F::load(r[0], L, uu);
      if (r[1]) b[u] = F::load(r[1], L, uu);
    }
#pragma unroll
    for (int u = 0; u < kSplitUnits; ++u) {
      const int uu = ul + u * kSplitWarps * 32;
      if (uu >= units) break;
      F::template dot<1>(a[u], xv, uu, acc[0]);
      if (r[1]) F::template dot<1>(b[u], xv, uu, acc[1]);
    }
  }
  for (int i = 0; i < 2; ++i) {
    acc[i][0] = warp_sum(acc[i][0]);
    if (lane == 0) part[warp][i] = acc[i][0];
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int i = 0; i < 2; ++i) {
    acc[i][0] = part[0][i];
    for (int w = 1; w < kSplitWarps; ++w) acc[i][0] += part[w][i];
  }
  job.template store<1>(p, acc, token);
}

// Calls f.template operator()<T>() for the weight type t.
template <class F>
void with_type(GgmlType t, F&& f) {
  switch (t) {
    case GgmlType::F32: f.template operator()<GgmlType::F32>(); break;
    case GgmlType::F16: f.template operator()<GgmlType::F16>(); break;
    case GgmlType::BF16: f.template operator()<GgmlType::BF16>(); break;
    case GgmlType::Q8_0: f.template operator()<GgmlType::Q8_0>(); break;
    case GgmlType::Q4_0: f.template operator()<GgmlType::Q4_0>(); break;
    case GgmlType::Q4_1: f.template operator()<GgmlType::Q4_1>(); break;
    case GgmlType::Q5_0: f.template operator()<GgmlType::Q5_0>(); break;
    case GgmlType::Q5_1: f.template operator()<GgmlType::Q5_1>(); break;
    case GgmlType::MXFP4: f.template operator()<GgmlType::MXFP4>(); break;
    case GgmlType::Q4_K: f.template operator()<GgmlType::Q4_K>(); break;
    case GgmlType::Q5_K: f.template operator()<GgmlType::Q5_K>(); break;
    case GgmlType::Q6_K: f.template operator()<GgmlType::Q6_K>(); break;
    default: fail_text("the CUDA backend has no matvec kernel for " + std::string(type_name(t)));
  }
  check_launch("matvec");
}

// Blocks of a kernel that fit on one multiprocessor at once (its registers decide: MXFP4's use 92).
template <auto Kernel, int Threads>
int resident_blocks() {
  static const int n = [] {
    int v = 0;
    TS_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, Kernel, Threads, 0));
    return std::max(1, v);
  }();
  return n;
}

// Blocks for `pairs` row pairs, `share` grids side by side (the routed experts' (token, rank)
// pairs): rows of one chunk loop inside a block, so one wave of resident blocks takes them all; more
// blocks would only add a partial second wave.
int64_t blocks_for(int64_t pairs, int64_t cols, int nt, int64_t share, int per_sm) {
  const int64_t need = ceil_div(pairs, kWarps);
  const int64_t ch = nt == 1 ? chunk_cols<1>() : chunk_cols<4>();
  if (cols > ch) return need;
  return std::max<int64_t>(1, std::min<int64_t>(need, per_sm * sm_count() / share));
}

template <int NT, class Job>
void launch_typed(GgmlType t, const Job& job, const float* x, int64_t ldx, int n_valid, int64_t cols, int64_t pairs,
                  int64_t share, cudaStream_t s) {
  with_type(t, [&]<GgmlType T>() {
    constexpr auto kernel = mv_kernel<T, NT, Job>;
    const int per_sm = resident_blocks<kernel, kWarps * 32>();
    const dim3 grid(static_cast<unsigned>(blocks_for(pairs, cols, NT, share, per_sm)), static_cast<unsigned>(share));
    kernel<<<grid, kWarps * 32, 0, s>>>(job, x, ldx, n_valid, cols, pairs);
  });
}

}  // namespace

void matvec(const float* x, int64_t ldx, int64_t n, const MatOut* outs, int n_outs, cudaStream_t s) {
  DenseJob job{};
  job.n_outs = n_outs;
  job.n = static_cast<int>(n);
  for (int j = 0; j < n_outs; ++j) {
    job.outs[j] = outs[j];
    job.pair_begin[j + 1] = job.pair_begin[j] + ceil_div(outs[j].w.rows, 2);
  }
  const int64_t pairs = job.pair_begin[n_outs], cols = outs[0].w.cols;
  if (cols <= chunk_cols<1>() && pairs < sm_count()) {
    const dim3 grid(static_cast<unsigned>(pairs), static_cast<unsigned>(n));
    with_type(outs[0].w.type, [&]<GgmlType T>() { mv_split_kernel<T, DenseJob><<<grid, kSplitWarps * 32, 0, s>>>(job, x, ldx, cols); });
    return;
  }
  if (n == 1) launch_typed<1>(outs[0].w.type, job, x, ldx, 1, cols, pairs, 1, s);
  else launch_typed<4>(outs[0].w.type, job, x, ldx, static_cast<int>(n), cols, pairs, 1, s);
}

void moe_gate_up_mv(const float* x, int64_t n, const int32_t* experts, const MoeDev& m, float* act, cudaStream_t s,
                    const RouteHere& route) {
  if (route.logits && (m.n_expert > 32 * kPerLane || m.k > kPerLane || m.k > m.n_expert))
    fail_text("the CUDA router handles at most " + std::to_string(32 * kPerLane) + " experts and " + std::to_string(kPerLane) +
              " chosen per token; this model has " + std::to_string(m.n_expert) + " and " + std::to_string(m.k));
  const GateUpJob job{m, experts, act, route, {}};
  launch_typed<1>(m.gate_type, job, x, m.n_embd, 1, m.n_embd, m.n_ff, n * m.k, s);
}

void moe_down_mv(const float* act, int64_t n, const int32_t* experts, const MoeDev& m, float* slots, cudaStream_t s) {
  const DownJob job{m, experts, slots, {}};
  launch_typed<1>(m.down_type, job, act, m.n_ff, 1, m.n_ff, ceil_div(m.n_embd, 2), n * m.k, s);
}

}  // namespace ts::gpu
