// The reference decoder: the definition every other path is tested against. Plain scalar code on
// top of the unpackers in blocks.h; values are d * q (+ m) in float, rounded once per operation,
// which is also how gguf-py and ggml compute them.
#include "quant/kernels.h"
#include "quant/blocks.h"
#include "util/error.h"

namespace ts::quant {
namespace {

// HasMin: only Q4_1/Q5_1 add m (adding a zero m would turn -0 into +0).
template <Block32 (*Unpack)(const uint8_t*), int Bytes, bool HasMin = false>
void decode32(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const Block32 u = Unpack(src + i * Bytes);
    for (int j = 0; j < kQK; ++j) {
      const float v = u.d * static_cast<float>(u.q[j]);
      dst[i * kQK + j] = HasMin ? v + u.m : v;
    }
  }
}

template <BlockK (*Unpack)(const uint8_t*), int Bytes>
void decode_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const BlockK u = Unpack(src + i * Bytes);
    for (int j = 0; j < kQKK; ++j) {
      const float d = u.d * static_cast<float>(u.scale[j / 16]);
      const float m = u.dmin * static_cast<float>(u.min[j / 16]);
      dst[i * kQKK + j] = d * static_cast<float>(u.q[j]) - m;
    }
  }
}

template <float (*Convert)(uint16_t)>
void decode_half(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Convert(load_u16(src + 2 * i));
}

}  // namespace

void dequantize_ref(GgmlType t, const void* src_v, float* dst, int64_t n) {
  const auto* src = static_cast<const uint8_t*>(src_v);
  switch (t) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case GgmlType::F16: return decode_half<fp16_to_fp32>(src, dst, n);
    case GgmlType::BF16: return decode_half<bf16_to_fp32>(src, dst, n);
    case GgmlType::Q4_0: return decode32<unpack_q4_0, layout::q4_0_bytes>(src, dst, n);
    case GgmlType::Q4_1: return decode32<unpack_q4_1, layout::q4_1_bytes, true>(src, dst, n);
    case GgmlType::Q5_0: return decode32<unpack_q5_0, layout::q5_0_bytes>(src, dst, n);
    case GgmlType::Q5_1: return decode32<unpack_q5_1, layout::q5_1_bytes, true>(src, dst, n);
    case GgmlType::Q8_0: return decode32<unpack_q8_0, layout::q8_0_bytes>(src, dst, n);
    case GgmlType::MXFP4: return decode32<unpack_mxfp4, layout::mxfp4_bytes>(src, dst, n);
    case GgmlType::Q4_K: return decode_k<unpack_q4_k, layout::q4_k_bytes>(src, dst, n);
    case GgmlType::Q5_K: return decode_k<unpack_q5_k, layout::q5_k_bytes>(src, dst, n);
    case GgmlType::Q6_K: return decode_k<unpack_q6_k, layout::q6_k_bytes>(src, dst, n);
    default: fail("cannot decode tensor type {}", type_name(t));
  }
}

}  // namespace ts::quant
