// The router contracts (moe/router.cpp, the definition) on the device, one warp per token: the
// routing kernel (moe.cu) and the routed experts' gate/up products, whose blocks route their own
// token (matvec.cu), run this same code, so both give the same experts and weights.
#pragma once
#include "backend/cuda/common.cuh"

namespace ts::gpu {

// Lane l takes experts l, l + 32, ... (at most kPerLane of them: n_expert <= 32 kPerLane). The
// values are recomputed from the logits where needed rather than held in arrays, so that the
// gate/up products, which route inside their own blocks, keep their registers for the products.
constexpr int kPerLane = 8;

// One token's router values under contract c: for SoftmaxTopKRenorm, probabilities over all experts
// (the normaliser a double sum in a fixed butterfly order), which rank them and are renormalised
// over the selected ones; for BiasedTopKSoftmax, the biased logits.
struct RouterValues {
  const float* l;
  const float* bias;
  int n_expert;
  RouterContract c;
  float mx = 0;
  double total = 0;
  __device__ void init() {
    if (c != RouterContract::SoftmaxTopKRenorm) return;
    const int lane = threadIdx.x % 32;
    mx = -INFINITY;
    for (int e = lane; e < n_expert; e += 32) mx = fmaxf(mx, logit(e));
    mx = warp_max(mx);
    total = 0;
    for (int e = lane; e < n_expert; e += 32) total += exp(static_cast<double>(logit(e) - mx));
    total = warp_sum(total);
  }
  __device__ float logit(int e) const { return l[e] + (bias ? bias[e] : 0.0f); }
  __device__ float value(int e) const {
    const float z = logit(e);
    return c == RouterContract::SoftmaxTopKRenorm ? static_cast<float>(exp(static_cast<double>(z - mx)) / total) : z;
  }
};

// The warp's best expert not yet taken (bit j of `taken`: expert lane + 32 j): the largest value,
// ties to the lower index (moe/router.cpp). A lane offers its own best; the butterfly keeps the
// better of each pair, so every lane ends with the same (value, index) whatever the order of the
// exchanges.
__device__ inline void warp_best(const RouterValues& rv, uint32_t taken, float& best_v, int& best_e) {
  const int lane = threadIdx.x % 32;
  best_v = 0.0f;
  best_e = -1;
  for (int j = 0, e = lane; e < rv.n_expert; ++j, e += 32) {
    if (taken >> j & 1u) continue;
    const float v = rv.value(e);
    if (best_e < 0 || v > best_v) {
      best_v = v;
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

// One token's routing by one warp (all 32 lanes): logits l[n_expert] (+ bias) under contract c;
// the k experts, best rank first, go to sel[0..k) (lane 0 writes them), and with w, their weights
// to w[0..k) (lane 0 keeps the selected values there until it turns them into weights, in double
// as moe/router.cpp does).
__device__ inline void route_token(const float* l, const float* bias, int n_expert, int k, RouterContract c, int32_t* sel,
                                   float* w) {
  const int lane = threadIdx.x % 32;
  RouterValues rv{l, bias, n_expert, c};
  rv.init();
  uint32_t taken = 0;
  for (int r = 0; r < k; ++r) {
    float bv;
    int be;
    warp_best(rv, taken, bv, be);
    if (be % 32 == lane) taken |= 1u << (be / 32);
    if (lane == 0) {
      sel[r] = be;
      if (w) w[r] = bv;
    }
  }
  if (lane != 0 || !w) return;
  double sum = 0;
  if (c == RouterContract::BiasedTopKSoftmax) {
    // Ranked on the biased logits; the softmax covers only the selected ones.
    const float top = w[0];
    for (int r = 0; r < k; ++r) sum += exp(static_cast<double>(w[r] - top));
    for (int r = 0; r < k; ++r) w[r] = static_cast<float>(exp(static_cast<double>(w[r] - top)) / sum);
    return;
  }
  for (int r = 0; r < k; ++r) sum += w[r];
  for (int r = 0; r < k; ++r) w[r] = static_cast<float>(w[r] / sum);
}

}  // namespace ts::gpu
