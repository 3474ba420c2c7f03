// Activation quantization, matching ggml's CPU backend so our quantized products carry the same
// rounding as llama.cpp's: Q8_0/Q8_1 scale by 127/amax and round half to even (the rounding of its
// AVX path), Q8_K scales by -127/max (max = the signed value of largest magnitude) and stores the
// float reciprocal plus 16-value sums. One scalar implementation serves every kernel table, so all
// ISAs see identical activations.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "util/error.h"

namespace ts::quant {
namespace {

template <bool WithSum>
void quantize_q8_32(const float* x, uint8_t* dst, int64_t n) {
  constexpr int kBytes = WithSum ? layout::q8_1_bytes : layout::q8_0_bytes;
  constexpr int kQs = WithSum ? layout::q8_1_qs : layout::q8_0_qs;
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    uint8_t* blk = dst + b * kBytes;
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.f;
    const float id = amax != 0 ? 127.f / amax : 0.f;
    int32_t sum = 0;
    for (int j = 0; j < kQK; ++j) {
      const auto q = static_cast<int8_t>(std::lrint(x[j] * id));
      blk[kQs + j] = static_cast<uint8_t>(q);
      sum += q;
    }
    store_f16(blk, d);
    if constexpr (WithSum) store_f16(blk + layout::q8_1_s, d * static_cast<float>(sum));
  }
}

void quantize_q8_k(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    uint8_t* blk = dst + b * layout::q8_k_bytes;
    float amax = 0, max = 0;
    for (int j = 0; j < kQKK; ++j)
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    std::memset(blk, 0, layout::q8_k_bytes);
    if (amax == 0) continue;
    const float iscale = -127.f / max;
    auto* q = reinterpret_cast<int8_t*>(blk + layout::q8_k_qs);
    for (int j = 0; j < kQKK; ++j) q[j] = static_cast<int8_t>(std::min(127L, std::lrint(iscale * x[j])));
    for (int g = 0; g < 16; ++g) {
      int16_t s = 0;
      for (int j = 0; j < 16; ++j) s = static_cast<int16_t>(s + q[16 * g + j]);
      std::memcpy(blk + layout::q8_k_bsums + 2 * g, &s, 2);
    }
    const float d = 1 / iscale;
    std::memcpy(blk, &d, 4);
  }
}

}  // namespace

GgmlType activation_type(GgmlType weight) {
  switch (weight) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: return GgmlType::F32;
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: case GgmlType::MXFP4: return GgmlType::Q8_0;
    case GgmlType::Q4_1: case GgmlType::Q5_1: return GgmlType::Q8_1;
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: return GgmlType::Q8_K;
    default: fail("no matrix-vector kernel for tensor type {}", type_name(weight));
  }
}

size_t activation_bytes(GgmlType weight, int64_t n) {
  return row_bytes(activation_type(weight), static_cast<uint64_t>(n));
}

void quantize_activation(GgmlType weight, const float* x, void* dst_v, int64_t n) {
  const GgmlType a = activation_type(weight);
  if (n % type_info(a).block_elems != 0)
    fail("activation length {} is not a multiple of the {} block size", n, type_name(a));
  auto* dst = static_cast<uint8_t*>(dst_v);
  switch (a) {
    case GgmlType::Q8_0: return quantize_q8_32<false>(x, dst, n);
    case GgmlType::Q8_1: return quantize_q8_32<true>(x, dst, n);
    case GgmlType::Q8_K: return quantize_q8_k(x, dst, n);
    default: std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
  }
}

}  // namespace ts::quant
