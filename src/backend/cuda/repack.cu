// Weights from the file's layout into the backend's (weight_layout.h), one thread per block.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/weight_layout.h"

namespace ts::gpu {
namespace {

__global__ void repack_kernel(GgmlType t, const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride,
                              int64_t rows, int64_t cols, int64_t blocks_per_row) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= rows * blocks_per_row) return;
  const int64_t row = i / blocks_per_row, b = i % blocks_per_row;
  const RowLayout r = row_layout(t, cols);
  uint8_t* d = dst + row * dst_stride;
  const uint8_t* s = src + row * src_stride;
  if (t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16) {
    // Plain rows: one thread per 16 bytes.
    memcpy(d + b * 16, s + b * 16, 16);
  } else {
    repack_block(t, s + b * native_block_bytes(t), b, d, d + r.lo, d + r.lo + r.hi);
  }
  if (b == 0) memset(d + r.lo + r.hi + r.aux, 0, r.stride - r.lo - r.hi - r.aux);
}

}  // namespace

void repack(GgmlType t, const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride, int64_t rows,
            int64_t cols, cudaStream_t s) {
  const bool plain = t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
  const int64_t per_row = plain ? row_layout(t, cols).lo / 16 : cols / values_per_aux_block(t);
  const int64_t total = rows * per_row;
  repack_kernel<<<ceil_div(total, 256), 256, 0, s>>>(t, src, src_stride, dst, dst_stride, rows, cols, per_row);
  check_launch("repack");
}

}  // namespace ts::gpu
