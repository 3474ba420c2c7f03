// The scalar kernel table: straightforward dot products (float weights with f32 activations, and the
// definition of the int16-activation contract built on the unpackers of blocks.h). It is the
// reference the vector kernels are tested against, and the fallback on CPUs without AVX2.
#include <cmath>

#include "quant/act16.h"
#include "quant/blocks.h"
#include "quant/kernel_table.h"

namespace ts::quant {
namespace {

float load_f32_elem(const uint8_t* p) { return load_f32(p); }
float load_f16_elem(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
float load_bf16_elem(const uint8_t* p) { return bf16_to_fp32(load_u16(p)); }

template <float (*Load)(const uint8_t*), int Bytes>
float dot_float(const uint8_t* w, const uint8_t* x, int64_t k) {
  float sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += Load(w + i * Bytes) * load_f32(x + 4 * i);
  return sum;
}

// --- int16 activations: the definition of the numeric contract in kernels.h ---------------------
inline int32_t group_dot(const int8_t* q, const int16_t* xq, int n) {
  int32_t s = 0;
  for (int j = 0; j < n; ++j) s += q[j] * xq[j];
  return s;
}

template <Block32 (*Unpack)(const uint8_t*), int WBytes, MinSign Sign>
float dot16_32(const uint8_t* w, const uint8_t* x, int64_t k) {
  const Act16Row a = act16_row(x, k);
  float acc = 0, accm = 0;
  for (int64_t b = 0; b < k / kQK; ++b) {
    const Block32 u = Unpack(w + b * WBytes);
    acc = std::fma(static_cast<float>(group_dot(u.q, a.q + b * kQK, kQK)), u.d * a.d[b], acc);
    if constexpr (Sign != MinSign::none) accm = std::fma(u.m, a.s[b], accm);
  }
  return Sign == MinSign::none ? acc : acc + accm;
}

// Q4_K/Q5_K: groups of 32 (scale[2g] == scale[2g+1]); Q6_K: groups of 16, no offset.
template <BlockK (*Unpack)(const uint8_t*), int WBytes, int Group>
float dot16_k(const uint8_t* w, const uint8_t* x, int64_t k) {
  const Act16Row a = act16_row(x, k);
  float acc = 0, accm = 0;
  for (int64_t sb = 0; sb < k / kQKK; ++sb) {
    const BlockK u = Unpack(w + sb * WBytes);
    for (int g = 0; g < kQKK / Group; ++g) {
      const int64_t e = sb * kQKK + g * Group, b = e / kQK;
      const float D = u.d * static_cast<float>(u.scale[g * Group / 16]);
      acc = std::fma(static_cast<float>(group_dot(u.q + g * Group, a.q + e, Group)), D * a.d[b], acc);
      if constexpr (Group == kQK) accm = std::fma(u.dmin * static_cast<float>(u.min[g * Group / 16]), a.s[b], accm);
    }
  }
  return Group == kQK ? acc - accm : acc;
}

template <float (*Dot)(const uint8_t*, const uint8_t*, int64_t)>
void matmul(const uint8_t* W, size_t row_stride, int64_t rows, int64_t k, const uint8_t* xq, size_t xq_stride,
            int64_t n_tok, float* Y, size_t y_stride) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < rows; ++r) Y[t * y_stride + r] = Dot(W + r * row_stride, xq + t * xq_stride, k);
}

}  // namespace

KernelTable make_scalar_kernels() {
  KernelTable kt;
  kt.name = "scalar";
  auto set = [&](GgmlType t, MatmulFn f) { kt.matmul[type_index(t)] = f; };
  set(GgmlType::F32, matmul<dot_float<load_f32_elem, 4>>);
  set(GgmlType::F16, matmul<dot_float<load_f16_elem, 2>>);
  set(GgmlType::BF16, matmul<dot_float<load_bf16_elem, 2>>);
  auto set16 = [&](GgmlType t, MatmulFn f) { kt.matmul16[type_index(t)] = f; };
  set16(GgmlType::Q4_0, matmul<dot16_32<unpack_q4_0, layout::q4_0_bytes, MinSign::none>>);
  set16(GgmlType::Q4_1, matmul<dot16_32<unpack_q4_1, layout::q4_1_bytes, MinSign::add>>);
  set16(GgmlType::Q5_0, matmul<dot16_32<unpack_q5_0, layout::q5_0_bytes, MinSign::none>>);
  set16(GgmlType::Q5_1, matmul<dot16_32<unpack_q5_1, layout::q5_1_bytes, MinSign::add>>);
  set16(GgmlType::Q8_0, matmul<dot16_32<unpack_q8_0, layout::q8_0_bytes, MinSign::none>>);
  set16(GgmlType::MXFP4, matmul<dot16_32<unpack_mxfp4, layout::mxfp4_bytes, MinSign::none>>);
  set16(GgmlType::Q4_K, matmul<dot16_k<unpack_q4_k, layout::q4_k_bytes, kQK>>);
  set16(GgmlType::Q5_K, matmul<dot16_k<unpack_q5_k, layout::q5_k_bytes, kQK>>);
  set16(GgmlType::Q6_K, matmul<dot16_k<unpack_q6_k, layout::q6_k_bytes, 16>>);
  return kt;
}

}  // namespace ts::quant
