// Routed experts on the device: the routing kernel (one warp per token, route.cuh) and the per-row
// steps of the many-token path around the expert GEMMs.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/route.cuh"

namespace ts::gpu {
namespace {

// One warp per token.
__global__ void route_kernel(const float* logits, const float* bias, int n, int n_expert, int k, RouterContract c,
                             int32_t* experts, float* weights) {
  const int t = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (t >= n) return;  // whole warps leave together
  const int64_t row = static_cast<int64_t>(t);
  route_token(logits + row * n_expert, bias, n_expert, k, c, experts + row * k, weights + row * k);
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
