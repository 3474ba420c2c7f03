// Small device helpers shared by the kernel files.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/check.h"
#include "backend/cuda/glu.h"

namespace ts::gpu {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum of one value per thread over the block, in a fixed order (so the same inputs give the same
// bits): butterfly within warps, then warp 0 over the warps' sums. Every thread gets the result.
// `shared` holds at least 33 doubles; blockDim.x is a multiple of 32.
__device__ inline double block_sum(double v, double* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    double t = lane < warps ? shared[lane] : 0.0;
    t = warp_sum(t);
    if (lane == 0) shared[32] = t;
  }
  __syncthreads();
  return shared[32];
}

}  // namespace ts::gpu
