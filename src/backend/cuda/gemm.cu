// Many-row products: the weights are decoded to halves (a pass over them, memory-bound) and
// multiplied by cuBLAS on the tensor cores with f32 accumulation. F32 weights (routers, f32 models)
// go through cuBLAS's plain f32 GEMM as they are: the handle keeps the default math mode, no TF32.
#include "backend/cuda/blas.h"
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/weight_layout.h"

namespace ts::gpu {
namespace {

void check_blas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) fail_text(std::string("cuBLAS error in ") + what + ": " + blas().status_string(st));
}

// One thread per 32-value group: decode (weight_layout.h, the definition) and store 32 halves.
__device__ void decode_to_half(GgmlType t, const uint8_t* row, int64_t cols, int64_t g, __half* dst) {
  float v[32];
  decode_group(t, row, cols, g, v);
  __align__(16) __half h[32];
#pragma unroll
  for (int j = 0; j < 32; ++j) h[j] = __float2half_rn(v[j]);
#pragma unroll
  for (int c = 0; c < 4; ++c) reinterpret_cast<uint4*>(dst + g * 32)[c] = reinterpret_cast<const uint4*>(h)[c];
}

__global__ void dequant_kernel(DMat w, __half* out) {
  const int64_t groups = w.cols / 32;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= w.rows * groups) return;
  const int64_t r = i / groups;
  decode_to_half(w.type, w.data + r * w.stride, w.cols, i % groups, out + r * w.cols);
}

// The used experts' matrices, expert u = used[blockIdx.y]: gate and up into gate_up[u] as
// [2 n_ff][n_embd] (gate rows first), down into down[u] as [n_embd][n_ff].
__global__ void dequant_experts_kernel(MoeDev m, const int32_t* used, __half* gate_up, __half* down) {
  const int64_t u = blockIdx.y, e = used[u];
  const ExpertDev& x = m.table[e];
  const int64_t gu_groups = 2 * m.n_ff * (m.n_embd / 32), d_groups = m.n_embd * (m.n_ff / 32);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < gu_groups + d_groups;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (i < gu_groups) {
      const int64_t per = m.n_embd / 32, r = i / per;
      const uint8_t* row = r < m.n_ff ? x.gate + r * m.gate_stride : x.up + (r - m.n_ff) * m.gate_stride;
      decode_to_half(m.gate_type, row, m.n_embd, i % per, gate_up + (u * 2 * m.n_ff + r) * m.n_embd);
    } else {
      const int64_t j = i - gu_groups, per = m.n_ff / 32, r = j / per;
      decode_to_half(m.down_type, x.down + r * m.down_stride, m.n_ff, j % per, down + (u * m.n_embd + r) * m.n_ff);
    }
  }
}

}  // namespace

bool gemm_in_halves(GgmlType t) { return t != GgmlType::F32; }

void dequant_half(const DMat& w, __half* out, cudaStream_t s) {
  const int64_t total = w.rows * (w.cols / 32);
  dequant_kernel<<<ceil_div(total, 256), 256, 0, s>>>(w, out);
  check_launch("dequant_half");
}

void dequant_experts(const MoeDev& m, const int32_t* used, int64_t n_used, __half* gate_up, __half* down, cudaStream_t s) {
  if (n_used == 0) return;
  dequant_experts_kernel<<<dim3(512, static_cast<unsigned>(n_used)), 256, 0, s>>>(m, used, gate_up, down);
  check_launch("dequant_experts");
}

// y[m][n] = x[m][k] w[n][k]^T (+ beta y), all row-major: column-major C = W^T(op) X.
void gemm_half(cublasHandle_t h, const __half* w, int64_t n, const __half* x, int64_t ldx, int64_t m, int64_t k, float* y,
               int64_t ldy, float beta) {
  const float alpha = 1.0f;
  check_blas(blas().gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, w,
                          CUDA_R_16F, static_cast<int>(k), x, CUDA_R_16F, static_cast<int>(ldx), &beta, y, CUDA_R_32F,
                          static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx");
}

void gemm_f32(cublasHandle_t h, const float* w, int64_t ldw, int64_t n, const float* x, int64_t ldx, int64_t m, int64_t k,
              float* y, int64_t ldy, float beta) {
  const float alpha = 1.0f;
  check_blas(blas().sgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, w,
                         static_cast<int>(ldw), x, static_cast<int>(ldx), &beta, y, static_cast<int>(ldy)),
             "cublasSgemm");
}

}  // namespace ts::gpu
