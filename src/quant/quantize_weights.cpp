// Weight quantization for `turbospark synth` and the tests. The 32-value formats follow ggml's
// reference quantizers (same scale choice and rounding), so files we write decode like files
// llama.cpp writes. MXFP4 tries the two E8M0 exponents that bracket the block's max and keeps the
// one with the smaller squared error (ggml always takes the lower one, which clips values above
// 6 * 2^(e-127) to 6 * 2^(e-127)). The K formats live in quantize_k.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quantize_k.h"
#include "util/error.h"

namespace ts::quant {
namespace {

float abs_max(const float* x, int n) {
  float amax = 0;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}
// The value of largest magnitude, with its sign (the first one on ties).
float signed_max(const float* x, int n) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | (q[j + 16] << 4));
}
uint32_t pack_fifth_bits(const uint8_t* q) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  return qh;
}

void quantize_q8_0(const float* x, uint8_t* b) {
  const float d = abs_max(x, kQK) / 127;
  const float id = d != 0 ? 1 / d : 0;
  store_f16(b, d);
  for (int j = 0; j < kQK; ++j) b[layout::q8_0_qs + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
}

// Symmetric 4/5-bit: the signed max maps to -2^(bits-1) exactly, everything else rounds to nearest.
template <int Levels>
void quantize_symmetric(const float* x, float& d, uint8_t* q) {
  d = signed_max(x, kQK) / -(Levels / 2);
  const float id = d != 0 ? 1 / d : 0;
  for (int j = 0; j < kQK; ++j)
    q[j] = static_cast<uint8_t>(std::min(Levels - 1, static_cast<int>(x[j] * id + (Levels / 2 + 0.5f))));
}
// Asymmetric 4/5-bit: [min, max] spread over the levels.
template <int Levels>
void quantize_affine(const float* x, float& d, float& m, uint8_t* q) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  d = (hi - lo) / (Levels - 1);
  m = lo;
  const float id = d != 0 ? 1 / d : 0;
  for (int j = 0; j < kQK; ++j)
    q[j] = static_cast<uint8_t>(std::min(Levels - 1, static_cast<int>((x[j] - lo) * id + 0.5f)));
}

void quantize_q4_0(const float* x, uint8_t* b) {
  float d;
  uint8_t q[kQK];
  quantize_symmetric<16>(x, d, q);
  store_f16(b, d);
  pack_nibbles(q, b + layout::q4_0_qs);
}
void quantize_q4_1(const float* x, uint8_t* b) {
  float d, m;
  uint8_t q[kQK];
  quantize_affine<16>(x, d, m, q);
  store_f16(b, d);
  store_f16(b + layout::q4_1_m, m);
  pack_nibbles(q, b + layout::q4_1_qs);
}
void quantize_q5_0(const float* x, uint8_t* b) {
  float d;
  uint8_t q[kQK];
  quantize_symmetric<32>(x, d, q);
  store_f16(b, d);
  const uint32_t qh = pack_fifth_bits(q);
  std::memcpy(b + layout::q5_0_qh, &qh, 4);
  pack_nibbles(q, b + layout::q5_0_qs);
}
void quantize_q5_1(const float* x, uint8_t* b) {
  float d, m;
  uint8_t q[kQK];
  quantize_affine<32>(x, d, m, q);
  store_f16(b, d);
  store_f16(b + layout::q5_1_m, m);
  const uint32_t qh = pack_fifth_bits(q);
  std::memcpy(b + layout::q5_1_qh, &qh, 4);
  pack_nibbles(q, b + layout::q5_1_qs);
}

// Nearest MXFP4 code for x at (halved) scale d; returns the squared error. The magnitudes
// {0,1,2,3,4,6,8,12} are searched by their midpoints (exact products: d is a power of two); a tie
// goes to the smaller magnitude, and anything that rounds to zero is +0 (code 0).
float mxfp4_code(float x, float d, uint8_t& code) {
  static constexpr float kMidpoints[7] = {0.5f, 1.5f, 2.5f, 3.5f, 5.0f, 7.0f, 10.0f};
  const float a = std::fabs(x);
  uint8_t m = 0;
  while (m < 7 && a > kMidpoints[m] * d) ++m;
  code = m == 0 ? 0 : static_cast<uint8_t>(x < 0 ? m + 8 : m);
  const float e = d * static_cast<float>(kMxfp4Values[code]) - x;
  return e * e;
}

void quantize_mxfp4(const float* x, uint8_t* b) {
  const float amax = abs_max(x, kQK);
  // e0 puts amax in [4, 8) * 2^(e0-127), past the largest code 6; e0 + 1 puts it in [2, 4).
  const int e0 = amax > 0 ? std::clamp(static_cast<int>(std::floor(std::log2(amax))) - 2 + 127, 0, 253) : 0;
  float best = INFINITY;
  for (int e = e0; e <= e0 + 1; ++e) {
    uint8_t q[kQK];
    float err = 0;
    for (int j = 0; j < kQK; ++j) err += mxfp4_code(x[j], e8m0_half(static_cast<uint8_t>(e)), q[j]);
    if (err < best) {
      best = err;
      b[0] = static_cast<uint8_t>(e);
      pack_nibbles(q, b + layout::mxfp4_qs);
    }
  }
}

template <void (*Quantize)(const float*, uint8_t*), int Elems, int Bytes>
void blocks(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n / Elems; ++i) Quantize(src + i * Elems, dst + i * Bytes);
}

}  // namespace

bool can_quantize_weights(GgmlType t) {
  switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0: case GgmlType::Q4_0:
    case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::MXFP4: case GgmlType::Q4_K:
    case GgmlType::Q5_K: case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

void quantize_weights(GgmlType t, const float* src, void* dst_v, int64_t n) {
  if (!can_quantize_weights(t)) fail("cannot quantize weights to {}", type_name(t));
  if (n % type_info(t).block_elems != 0) fail("{} values do not fill whole {} blocks", n, type_name(t));
  auto* dst = static_cast<uint8_t*>(dst_v);
  switch (t) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) store_f16(dst + 2 * i, src[i]);
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case GgmlType::Q8_0: return blocks<quantize_q8_0, kQK, layout::q8_0_bytes>(src, dst, n);
    case GgmlType::Q4_0: return blocks<quantize_q4_0, kQK, layout::q4_0_bytes>(src, dst, n);
    case GgmlType::Q4_1: return blocks<quantize_q4_1, kQK, layout::q4_1_bytes>(src, dst, n);
    case GgmlType::Q5_0: return blocks<quantize_q5_0, kQK, layout::q5_0_bytes>(src, dst, n);
    case GgmlType::Q5_1: return blocks<quantize_q5_1, kQK, layout::q5_1_bytes>(src, dst, n);
    case GgmlType::MXFP4: return blocks<quantize_mxfp4, kQK, layout::mxfp4_bytes>(src, dst, n);
    case GgmlType::Q4_K: return blocks<quantize_q4_k_block, kQKK, layout::q4_k_bytes>(src, dst, n);
    case GgmlType::Q5_K: return blocks<quantize_q5_k_block, kQKK, layout::q5_k_bytes>(src, dst, n);
    case GgmlType::Q6_K: return blocks<quantize_q6_k_block, kQKK, layout::q6_k_bytes>(src, dst, n);
    default: return;
  }
}

}  // namespace ts::quant
