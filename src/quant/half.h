// IEEE half and bfloat16 <-> float, exact and branch-light, usable on any x86-64 (the F16C
// instructions are used by the vector kernels, not here).
#pragma once
#include <cstdint>
#include <cstring>

namespace ts {

inline float fp16_to_fp32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  uint32_t bits = (two_w >> 4) + exp_offset;
  float normalized;
  std::memcpy(&normalized, &bits, 4);
  normalized *= 0x1.0p-112f;
  bits = (two_w >> 17) | (126u << 23);
  float denormalized;
  std::memcpy(&denormalized, &bits, 4);
  denormalized -= 0.5f;
  const uint32_t denorm_cutoff = 1u << 27;
  uint32_t result;
  if (two_w < denorm_cutoff) std::memcpy(&result, &denormalized, 4);
  else std::memcpy(&result, &normalized, 4);
  result |= sign;
  float out;
  std::memcpy(&out, &result, 4);
  return out;
}

inline uint16_t fp32_to_fp16(float f) {  // round to nearest even
  float base = (f < 0 ? -f : f) * 0x1.0p+112f;
  base *= 0x1.0p-110f;
  uint32_t w;
  std::memcpy(&w, &f, 4);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  uint32_t bias_bits = (bias >> 1) + 0x07800000u;
  float bias_f;
  std::memcpy(&bias_f, &bias_bits, 4);
  base = bias_f + base;
  uint32_t bits;
  std::memcpy(&bits, &base, 4);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

inline float bf16_to_fp32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

inline uint16_t fp32_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t w;
  std::memcpy(&w, &f, 4);
  if ((w & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((w >> 16) | 64);
  return static_cast<uint16_t>((w + (0x7fffu + ((w >> 16) & 1))) >> 16);
}

}  // namespace ts
