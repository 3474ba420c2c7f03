// Byte layouts of the block formats (the same as ggml's, since that is what GGUF files hold) and the
// scalar unpacking of one block into small integers plus float scales. Both the reference decoder and
// the scalar dot products are written on top of these unpackers, so the formats are defined once.
// GGUF data is mmapped and blocks of 17/18/22 bytes sit at any address: every multi-byte field is
// read with memcpy, never through a cast pointer.
#pragma once
#include <cstdint>
#include <cstring>

#include "quant/half.h"
#include "quant/scales.h"

namespace ts::quant {

inline constexpr int kQK = 32;    // elements per block of the "_0/_1" formats and MXFP4
inline constexpr int kQKK = 256;  // elements per super-block of the K formats

// Field offsets inside one block, in bytes.
namespace layout {
inline constexpr int q4_0_qs = 2, q4_0_bytes = 18;
inline constexpr int q4_1_m = 2, q4_1_qs = 4, q4_1_bytes = 20;
inline constexpr int q5_0_qh = 2, q5_0_qs = 6, q5_0_bytes = 22;
inline constexpr int q5_1_m = 2, q5_1_qh = 4, q5_1_qs = 8, q5_1_bytes = 24;
inline constexpr int q8_0_qs = 2, q8_0_bytes = 34;
inline constexpr int mxfp4_qs = 1, mxfp4_bytes = 17;             // byte 0 is the E8M0 exponent
inline constexpr int q4_k_dmin = 2, q4_k_scales = 4, q4_k_qs = 16, q4_k_bytes = 144;
inline constexpr int q5_k_dmin = 2, q5_k_scales = 4, q5_k_qh = 16, q5_k_qs = 48, q5_k_bytes = 176;
inline constexpr int q6_k_qh = 128, q6_k_scales = 192, q6_k_d = 208, q6_k_bytes = 210;
}  // namespace layout

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float load_f16(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
inline void store_f16(uint8_t* p, float f) {
  const uint16_t h = fp32_to_fp16(f);
  std::memcpy(p, &h, 2);
}

// MXFP4's E2M1 values, doubled (quant/scales.h, e8m0_half_bits, halves the scale to compensate).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e8m0_half_bits(e);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// --- scalar unpackers: value i of a block = d * q[i] + m -----------------------------------------
struct Block32 {
  float d = 0, m = 0;
  int8_t q[kQK];
};

// Element j of a 4-bit block is the low nibble of qs[j] and element j + 16 the high nibble.
inline void unpack_nibbles(const uint8_t* qs, int8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>(qs[j] & 0xF);
    q[j + 16] = static_cast<int8_t>(qs[j] >> 4);
  }
}
// Bit j of the little-endian qh word is the fifth bit of element j.
inline void add_fifth_bits(uint32_t qh, int8_t* q) {
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(q[j] | (((qh >> j) & 1) << 4));
}
inline void add_offset(int8_t* q, int off) {
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(q[j] + off);
}

inline Block32 unpack_q4_0(const uint8_t* b) {
  Block32 u;
  u.d = load_f16(b);
  unpack_nibbles(b + layout::q4_0_qs, u.q);
  add_offset(u.q, -8);
  return u;
}
inline Block32 unpack_q4_1(const uint8_t* b) {
  Block32 u;
  u.d = load_f16(b);
  u.m = load_f16(b + layout::q4_1_m);
  unpack_nibbles(b + layout::q4_1_qs, u.q);
  return u;
}
inline Block32 unpack_q5_0(const uint8_t* b) {
  Block32 u;
  u.d = load_f16(b);
  unpack_nibbles(b + layout::q5_0_qs, u.q);
  add_fifth_bits(load_u32(b + layout::q5_0_qh), u.q);
  add_offset(u.q, -16);
  return u;
}
inline Block32 unpack_q5_1(const uint8_t* b) {
  Block32 u;
  u.d = load_f16(b);
  u.m = load_f16(b + layout::q5_1_m);
  unpack_nibbles(b + layout::q5_1_qs, u.q);
  add_fifth_bits(load_u32(b + layout::q5_1_qh), u.q);
  return u;
}
inline Block32 unpack_q8_0(const uint8_t* b) {
  Block32 u;
  u.d = load_f16(b);
  std::memcpy(u.q, b + layout::q8_0_qs, kQK);
  return u;
}
inline Block32 unpack_mxfp4(const uint8_t* b) {
  Block32 u;
  u.d = e8m0_half(b[0]);
  unpack_nibbles(b + layout::mxfp4_qs, u.q);
  for (int j = 0; j < kQK; ++j) u.q[j] = kMxfp4Values[static_cast<uint8_t>(u.q[j])];
  return u;
}

// A K super-block: value i = (d * scale[i/16]) * q[i] - (dmin * min[i/16]). Q4_K and Q5_K have one
// scale/min per 32 values (stored twice here); Q6_K has a signed scale per 16 and no min.
struct BlockK {
  float d = 0, dmin = 0;
  int8_t q[kQKK];
  int16_t scale[16], min[16];
};

inline void unpack_k_scales(const uint8_t* s, BlockK& u) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    k_scale_min(s, j, sc, mn);
    u.scale[2 * j] = u.scale[2 * j + 1] = sc;
    u.min[2 * j] = u.min[2 * j + 1] = mn;
  }
}
// Q4_K/Q5_K: each 64-value chunk j takes the low nibbles of 32 bytes then their high nibbles; in
// Q5_K bit 2j (low half) and 2j+1 (high half) of qh[l] add 16.
inline BlockK unpack_q4_k(const uint8_t* b) {
  BlockK u;
  u.d = load_f16(b);
  u.dmin = load_f16(b + layout::q4_k_dmin);
  unpack_k_scales(b + layout::q4_k_scales, u);
  const uint8_t* qs = b + layout::q4_k_qs;
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      u.q[64 * j + l] = static_cast<int8_t>(qs[32 * j + l] & 0xF);
      u.q[64 * j + 32 + l] = static_cast<int8_t>(qs[32 * j + l] >> 4);
    }
  return u;
}
inline BlockK unpack_q5_k(const uint8_t* b) {
  BlockK u;
  u.d = load_f16(b);
  u.dmin = load_f16(b + layout::q5_k_dmin);
  unpack_k_scales(b + layout::q5_k_scales, u);
  const uint8_t* qh = b + layout::q5_k_qh;
  const uint8_t* qs = b + layout::q5_k_qs;
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      u.q[64 * j + l] = static_cast<int8_t>((qs[32 * j + l] & 0xF) | (((qh[l] >> (2 * j)) & 1) << 4));
      u.q[64 * j + 32 + l] = static_cast<int8_t>((qs[32 * j + l] >> 4) | (((qh[l] >> (2 * j + 1)) & 1) << 4));
    }
  return u;
}
// Q6_K: per 128-value half h, value 32m + l (m = 0..3) takes a nibble of ql (low nibbles of bytes
// l and l+32 for m = 0, 1; high nibbles for m = 2, 3) and bits 2m..2m+1 of qh[l]; stored minus 32.
inline BlockK unpack_q6_k(const uint8_t* b) {
  BlockK u;
  u.d = load_f16(b + layout::q6_k_d);
  for (int i = 0; i < 16; ++i) {
    u.scale[i] = static_cast<int8_t>(b[layout::q6_k_scales + i]);
    u.min[i] = 0;
  }
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + layout::q6_k_qh + 32 * h;
    for (int l = 0; l < 32; ++l)
      for (int m = 0; m < 4; ++m) {
        const int lo = (ql[l + 32 * (m & 1)] >> (4 * (m >> 1))) & 0xF;
        const int hi = (qh[l] >> (2 * m)) & 3;
        u.q[128 * h + 32 * m + l] = static_cast<int8_t>((lo | (hi << 4)) - 32);
      }
  }
  return u;
}

}  // namespace ts::quant
