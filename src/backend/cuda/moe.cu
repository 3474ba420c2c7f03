// Routed experts on the device: the router contracts (moe/router.cpp, the definition) with one
// thread per token, and the per-row steps of the many-token path around the expert GEMMs.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace ts::gpu {
namespace {

// Index of the largest of v[0..n) not yet in sel[0..r), ties to the lower index (moe/router.cpp).
__device__ int best_remaining(const float* v, int n, const int32_t* sel, int r) {
  int best = -1;
  for (int e = 0; e < n; ++e) {
    bool taken = false;
    for (int j = 0; j < r; ++j) taken = taken || sel[j] == e;
    if (!taken && (best < 0 || v[e] > v[best])) best = e;
  }
  return best;
}

__global__ void route_kernel(const float* logits, const float* bias, int n, int n_expert, int k, RouterContract c,
                             int32_t* experts, float* weights, float* scratch) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  float* z = scratch + static_cast<int64_t>(t) * n_expert;
  const float* l = logits + static_cast<int64_t>(t) * n_expert;
  for (int e = 0; e < n_expert; ++e) z[e] = l[e] + (bias ? bias[e] : 0.0f);
  int32_t* sel = experts + static_cast<int64_t>(t) * k;
  float* w = weights + static_cast<int64_t>(t) * k;
  if (c == RouterContract::BiasedTopKSoftmax) {
    // Ranked on the biased logits; the softmax covers only the selected ones.
    for (int r = 0; r < k; ++r) sel[r] = best_remaining(z, n_expert, sel, r);
    const float top = z[sel[0]];
    double sum = 0;
    for (int r = 0; r < k; ++r) sum += exp(static_cast<double>(z[sel[r]] - top));
    for (int r = 0; r < k; ++r) w[r] = static_cast<float>(exp(static_cast<double>(z[sel[r]] - top)) / sum);
    return;
  }
  // Probabilities over all experts rank them; the selected ones are renormalised to sum to 1.
  float mx = z[0];
  for (int e = 1; e < n_expert; ++e) mx = fmaxf(mx, z[e]);
  double total = 0;
  for (int e = 0; e < n_expert; ++e) total += exp(static_cast<double>(z[e] - mx));
  for (int e = 0; e < n_expert; ++e) z[e] = static_cast<float>(exp(static_cast<double>(z[e] - mx)) / total);
  for (int r = 0; r < k; ++r) sel[r] = best_remaining(z, n_expert, sel, r);
  double sum = 0;
  for (int r = 0; r < k; ++r) sum += z[sel[r]];
  for (int r = 0; r < k; ++r) w[r] = static_cast<float>(z[sel[r]] / sum);
}

// act[i] = glu(gate + bias, up + bias) of sorted pair i, from the expert GEMM's [gate | up] rows.
__global__ void sorted_glu_kernel(const float* h, const int32_t* pair_expert, MoeDev m, __half* act) {
  const int64_t i = blockIdx.x;
  const ExpertDev& e = m.table[pair_expert[i]];
  const float* hr = h + i * 2 * m.n_ff;
  for (int64_t j = threadIdx.x; j < m.n_ff; j += blockDim.x) {
    const float g = hr[j] + (e.gate_bias ? e.gate_bias[j] : 0.0f);
    const float u = hr[m.n_ff + j] + (e.up_bias ? e.up_bias[j] : 0.0f);
    act[i * m.n_ff + j] = __float2half_rn(glu_value(m.act, g, u));
  }
}

// out.row(t) = sum over ranks, in order, of weight * (down output of the pair + its down bias).
__global__ void sorted_combine_kernel(const float* down, const int32_t* sorted_of_slot, const int32_t* experts,
                                      const float* weights, MoeDev m, float* out) {
  const int64_t t = blockIdx.x;
  for (int64_t j = threadIdx.x; j < m.n_embd; j += blockDim.x) {
    float o = 0.0f;
    for (int64_t r = 0; r < m.k; ++r) {
      const ExpertDev& e = m.table[experts[t * m.k + r]];
      const float v = down[static_cast<int64_t>(sorted_of_slot[t * m.k + r]) * m.n_embd + j] + (e.down_bias ? e.down_bias[j] : 0.0f);
      o += weights[t * m.k + r] * v;
    }
    out[t * m.n_embd + j] = o;
  }
}

}  // namespace

void route(const float* logits, const float* bias, int64_t n, int64_t n_expert, int64_t k, RouterContract c,
           int32_t* experts, float* weights, float* scratch, cudaStream_t s) {
  route_kernel<<<ceil_div(n, 64), 64, 0, s>>>(logits, bias, static_cast<int>(n), static_cast<int>(n_expert),
                                               static_cast<int>(k), c, experts, weights, scratch);
  check_launch("route");
}

void sorted_glu(const float* h, const int32_t* pair_expert, int64_t pairs, const MoeDev& m, __half* act, cudaStream_t s) {
  sorted_glu_kernel<<<pairs, 256, 0, s>>>(h, pair_expert, m, act);
  check_launch("sorted_glu");
}

void sorted_combine(const float* down, const int32_t* sorted_of_slot, const int32_t* experts, const float* weights,
                    int64_t n, const MoeDev& m, float* out, cudaStream_t s) {
  sorted_combine_kernel<<<n, 256, 0, s>>>(down, sorted_of_slot, experts, weights, m, out);
  check_launch("sorted_combine");
}

}  // namespace ts::gpu
