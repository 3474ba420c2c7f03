// Routed experts on the device: the router contracts (moe/router.cpp, the definition) with one
// warp per token, and the per-row steps of the many-token path around the expert GEMMs.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace ts::gpu {
namespace {

// Lane l holds experts l, l + 32, ... (at most kPerLane of them: n_expert <= 32 kPerLane).
constexpr int kPerLane = 8;

// The warp's best expert not yet taken: the largest value, ties to the lower index (moe/router.cpp).
// A lane offers its own best; the butterfly keeps the better of each pair, so every lane ends with
// the same (value, index) whatever the order of the exchanges.
__device__ void warp_best(const float (&v)[kPerLane], const bool (&taken)[kPerLane], int n_expert, float& best_v, int& best_e) {
  const int lane = threadIdx.x % 32;
  best_v = 0.0f;
  best_e = -1;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int e = lane + 32 * j;
    if (e < n_expert && !taken[j] && (best_e < 0 || v[j] > best_v)) {
      best_v = v[j];
      best_e = e;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best_v, o);
    const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
    if (oe >= 0 && (best_e < 0 || ov > best_v || (ov == best_v && oe < best_e))) {
      best_v = ov;
      best_e = oe;
    }
  }
}

// One warp per token. The probabilities' normaliser is a double sum in a fixed butterfly order; the
// k selected weights are computed by lane 0 in double as moe/router.cpp does.
__global__ void route_kernel(const float* logits, const float* bias, int n, int n_expert, int k, RouterContract c,
                             int32_t* experts, float* weights) {
  const int t = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (t >= n) return;  // whole warps leave together
  const float* l = logits + static_cast<int64_t>(t) * n_expert;
  float z[kPerLane];
  bool taken[kPerLane];
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int e = lane + 32 * j;
    z[j] = e < n_expert ? l[e] + (bias ? bias[e] : 0.0f) : 0.0f;
    taken[j] = false;
  }
  if (c == RouterContract::SoftmaxTopKRenorm) {
    // Probabilities over all experts rank them; the selected ones are renormalised to sum to 1.
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (lane + 32 * j < n_expert) mx = fmaxf(mx, z[j]);
    mx = warp_max(mx);
    double total = 0;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (lane + 32 * j < n_expert) total += exp(static_cast<double>(z[j] - mx));
    total = warp_sum(total);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) z[j] = static_cast<float>(exp(static_cast<double>(z[j] - mx)) / total);
  }
  int32_t* sel = experts + static_cast<int64_t>(t) * k;
  float* w = weights + static_cast<int64_t>(t) * k;
  float chosen[kPerLane];  // lane 0: the selected values, best first (k <= kPerLane)
  for (int r = 0; r < k; ++r) {
    float bv;
    int be;
    warp_best(z, taken, n_expert, bv, be);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) taken[j] = taken[j] || lane + 32 * j == be;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (j == r) chosen[j] = bv;
    if (lane == 0) sel[r] = be;
  }
  if (lane != 0) return;
  double sum = 0;
  if (c == RouterContract::BiasedTopKSoftmax) {
    // Ranked on the biased logits; the softmax covers only the selected ones.
#pragma unroll
    for (int r = 0; r < kPerLane; ++r)
      if (r < k) sum += exp(static_cast<double>(chosen[r] - chosen[0]));
#pragma unroll
    for (int r = 0; r < kPerLane; ++r)
      if (r < k) w[r] = static_cast<float>(exp(static_cast<double>(chosen[r] - chosen[0])) / sum);
    return;
  }
#pragma unroll
  for (int r = 0; r < kPerLane; ++r)
    if (r < k) sum += chosen[r];
#pragma unroll
  for (int r = 0; r < kPerLane; ++r)
    if (r < k) w[r] = static_cast<float>(chosen[r] / sum);
}

// act[i] = glu(gate + bias, up + bias) of sorted pair i, from the expert GEMM's [gate | up] rows
// (pairs of experts not in the table belong to another wave).
__global__ void sorted_glu_kernel(const float* h, const int32_t* pair_expert, MoeDev m, __half* act) {
  const int64_t i = blockIdx.x;
  const ExpertDev& e = m.table[pair_expert[i]];
  if (!e.gate) return;
  const float* hr = h + i * 2 * m.n_ff;
  for (int64_t j = threadIdx.x; j < m.n_ff; j += blockDim.x) {
    const float g = hr[j] + (e.gate_bias ? e.gate_bias[j] : 0.0f);
    const float u = hr[m.n_ff + j] + (e.up_bias ? e.up_bias[j] : 0.0f);
    act[i * m.n_ff + j] = __float2half_rn(glu_value(m.act, g, u));
  }
}

// down[i] += the down bias of sorted pair i's expert (pairs of experts not in the table: another wave).
__global__ void sorted_down_bias_kernel(float* down, const int32_t* pair_expert, MoeDev m) {
  const int64_t i = blockIdx.x;
  const ExpertDev& e = m.table[pair_expert[i]];
  if (!e.gate || !e.down_bias) return;
  for (int64_t j = threadIdx.x; j < m.n_embd; j += blockDim.x) down[i * m.n_embd + j] += e.down_bias[j];
}

// out.row(t) = sum over ranks, in order, of weight * (down output of the pair, with its bias); or
// out.row(t) += that sum.
__global__ void sorted_combine_kernel(const float* down, const int32_t* sorted_of_slot, const float* weights, int64_t k,
                                      int64_t n_embd, bool accumulate, float* out) {
  const int64_t t = blockIdx.x;
  for (int64_t j = threadIdx.x; j < n_embd; j += blockDim.x) {
    float o = 0.0f;
    for (int64_t r = 0; r < k; ++r) o += weights[t * k + r] * down[static_cast<int64_t>(sorted_of_slot[t * k + r]) * n_embd + j];
    out[t * n_embd + j] = accumulate ? out[t * n_embd + j] + o : o;
  }
}

}  // namespace

void route(const float* logits, const float* bias, int64_t n, int64_t n_expert, int64_t k, RouterContract c,
           int32_t* experts, float* weights, cudaStream_t s) {
  if (n_expert > 32 * kPerLane || k > kPerLane || k > n_expert)
    fail_text("the CUDA router handles at most " + std::to_string(32 * kPerLane) + " experts and " + std::to_string(kPerLane) +
              " chosen per token; this model has " + std::to_string(n_expert) + " and " + std::to_string(k));
  route_kernel<<<ceil_div(n, 4), 128, 0, s>>>(logits, bias, static_cast<int>(n), static_cast<int>(n_expert), static_cast<int>(k),
                                              c, experts, weights);
  check_launch("route");
}

void sorted_glu(const float* h, const int32_t* pair_expert, int64_t pairs, const MoeDev& m, __half* act, cudaStream_t s) {
  sorted_glu_kernel<<<pairs, 256, 0, s>>>(h, pair_expert, m, act);
  check_launch("sorted_glu");
}

void sorted_down_bias(float* down, const int32_t* pair_expert, int64_t pairs, const MoeDev& m, cudaStream_t s) {
  sorted_down_bias_kernel<<<pairs, 256, 0, s>>>(down, pair_expert, m);
  check_launch("sorted_down_bias");
}

void sorted_combine(const float* down, const int32_t* sorted_of_slot, const float* weights, int64_t n, int64_t k,
                    int64_t n_embd, bool accumulate, float* out, cudaStream_t s) {
  sorted_combine_kernel<<<n, 256, 0, s>>>(down, sorted_of_slot, weights, k, n_embd, accumulate, out);
  check_launch("sorted_combine");
}

}  // namespace ts::gpu
