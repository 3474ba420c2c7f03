// How the CUDA backend lays out a weight matrix in device memory. Every row keeps its own bytes
// (rows can still be sliced, e.g. one expert out of a stacked tensor) but splits them into planes,
// so that the kernels read the bulk with aligned 16-byte loads:
//   lo:  the low 4 bits of every value (8 for Q8_0; the raw values for F32/F16/BF16), 32 values per
//        16 bytes for the 4-bit families with byte i of a group holding value i (low nibble) and
//        value i + 16 (high nibble): ggml's own order for Q4_0/Q4_1/Q5_x/MXFP4, re-ordered for the
//        K formats so that every format reads the same way;
//   hi:  the extra high bits (Q5_0/Q5_1/Q5_K: 1 bit per value, one word per group, value i's at bit
//        8(i%4) + i/4; Q6_K: 2 bits per value, two words per group, value i's in word i/16 at bit
//        8(j%4) + 2(j/4) with j = i%16): one shift and mask then puts the bits of 4 values next to
//        their nibbles in 4 bytes (quant_dot.cuh);
//   aux: the block scales, byte for byte as in the file (per 32 values, or per 256 for K formats;
//        Q6_K's is re-ordered to d, 2 zero bytes, 16 scales).
// The stride is rounded up to 16 bytes. Bytes per row are the file's plus at most 15 of padding.
// Everything here compiles for the host too: the host tests check the round trip against the
// reference decoder (quant::dequantize) without a GPU.
#pragma once
#include <cstdint>
#include <cstring>

#include "quant/scales.h"
#include "quant/types.h"

#if defined(__CUDACC__)
#define TS_HD __host__ __device__ inline
#else
#define TS_HD inline
#endif

namespace ts::gpu {

struct RowLayout {
  uint32_t lo = 0, hi = 0, aux = 0;  // bytes of each plane in one row
  uint32_t stride = 0;               // bytes from one row to the next (16-byte multiple)
};

// Bytes per 32-value group in the hi plane and per aux block; aux blocks cover 32 or 256 values.
TS_HD int hi_bytes_per_group(GgmlType t) {
  switch (t) {
    case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q5_K: return 4;
    case GgmlType::Q6_K: return 8;
    default: return 0;
  }
}
TS_HD int aux_bytes_per_block(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q5_0: return 2;
    case GgmlType::Q4_1: case GgmlType::Q5_1: return 4;
    case GgmlType::MXFP4: return 1;
    case GgmlType::Q4_K: case GgmlType::Q5_K: return 16;
    case GgmlType::Q6_K: return 20;
    default: return 0;
  }
}
TS_HD int values_per_aux_block(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K ? 256 : 32;
}
// Bits per value in the lo plane.
TS_HD int lo_bits(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 32;
    case GgmlType::F16: case GgmlType::BF16: return 16;
    case GgmlType::Q8_0: return 8;
    default: return 4;
  }
}

TS_HD RowLayout row_layout(GgmlType t, int64_t cols) {
  RowLayout r;
  r.lo = static_cast<uint32_t>(cols * lo_bits(t) / 8);
  r.hi = static_cast<uint32_t>(cols / 32 * hi_bytes_per_group(t));
  r.aux = static_cast<uint32_t>(cols / values_per_aux_block(t) * aux_bytes_per_block(t));
  r.stride = (r.lo + r.hi + r.aux + 15) / 16 * 16;
  return r;
}

TS_HD int q5_bit(int i) { return 8 * (i % 4) + i / 4; }
TS_HD int q6_bit(int i) { return 8 * (i % 16 % 4) + 2 * (i % 16 / 4); }  // within word i / 16
TS_HD uint32_t q5_word(uint32_t natural) {  // bit i = value i -> the hi-plane order
  uint32_t w = 0;
  for (int i = 0; i < 32; ++i) w |= ((natural >> i) & 1u) << q5_bit(i);
  return w;
}

TS_HD uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
TS_HD uint32_t rd32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

TS_HD float half_to_float(uint16_t h) {
  // Exact for every half, including subnormals (no intrinsics: the host compiles this too).
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    exp = 113;
    while (!(man & 0x400)) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}
TS_HD float bits_to_float(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
// E8M0 exponent -> 2^(e-128): MXFP4 values are stored doubled (quant/scales.h).
TS_HD float e8m0_half(uint8_t e) { return bits_to_float(quant::e8m0_half_bits(e)); }
using quant::k_scale_min;  // Q4_K/Q5_K: 6-bit scale and min of sub-block j from the 12 packed bytes

// --- repacking: one row from the file's layout -------------------------------------------------

// Bytes of one block (32 values, 256 for K formats) in the file (quant/blocks.h).
TS_HD int native_block_bytes(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return 34;
    case GgmlType::Q4_0: return 18;
    case GgmlType::Q4_1: return 20;
    case GgmlType::Q5_0: return 22;
    case GgmlType::Q5_1: return 24;
    case GgmlType::MXFP4: return 17;
    case GgmlType::Q4_K: return 144;
    case GgmlType::Q5_K: return 176;
    case GgmlType::Q6_K: return 210;
    default: return 0;
  }
}

// Writes the 4-bit value v (0..15) of group value i (0..31) into a 16-byte group of the lo plane.
TS_HD void put_nibble(uint8_t* grp, int i, int v) {
  if (i < 16) grp[i] = static_cast<uint8_t>((grp[i] & 0xF0) | v);
  else grp[i - 16] = static_cast<uint8_t>((grp[i - 16] & 0x0F) | (v << 4));
}

// Block b of a row (32 values, or 256 for K formats) from `src` (the file's block) into the planes.
TS_HD void repack_block(GgmlType t, const uint8_t* src, int64_t b, uint8_t* lo, uint8_t* hi, uint8_t* aux) {
  const int ab = aux_bytes_per_block(t);
  switch (t) {
    case GgmlType::Q8_0:
      memcpy(aux + b * 2, src, 2);
      memcpy(lo + b * 32, src + 2, 32);
      return;
    case GgmlType::Q4_0:
      memcpy(aux + b * 2, src, 2);
      memcpy(lo + b * 16, src + 2, 16);
      return;
    case GgmlType::Q4_1:
      memcpy(aux + b * 4, src, 4);
      memcpy(lo + b * 16, src + 4, 16);
      return;
    case GgmlType::Q5_0:
    case GgmlType::Q5_1: {
      const int ab5 = t == GgmlType::Q5_0 ? 2 : 4;
      memcpy(aux + b * ab5, src, ab5);
      const uint32_t w = q5_word(rd32(src + ab5));
      memcpy(hi + b * 4, &w, 4);
      memcpy(lo + b * 16, src + ab5 + 4, 16);
      return;
    }
    case GgmlType::MXFP4:
      aux[b] = src[0];
      memcpy(lo + b * 16, src + 1, 16);
      return;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      memcpy(aux + b * ab, src, 16);  // d, dmin, 12 scale bytes
      const uint8_t* qs = src + (t == GgmlType::Q4_K ? 16 : 48);
      const uint8_t* qh = src + 16;
      for (int g = 0; g < 8; ++g) {
        uint8_t* grp = lo + (b * 8 + g) * 16;
        memset(grp, 0, 16);  // put_nibble merges into what is there
        uint32_t hbits = 0;
        for (int l = 0; l < 32; ++l) {
          // Value 32g + l is a nibble of qs[32(g/2) + l]: low for even g, high for odd g.
          put_nibble(grp, l, (qs[32 * (g / 2) + l] >> (4 * (g & 1))) & 0xF);
          if (t == GgmlType::Q5_K) hbits |= static_cast<uint32_t>((qh[l] >> g) & 1) << q5_bit(l);
        }
        if (t == GgmlType::Q5_K) memcpy(hi + (b * 8 + g) * 4, &hbits, 4);
      }
      return;
    }
    case GgmlType::Q6_K: {
      uint8_t* a = aux + b * ab;
      memcpy(a, src + 208, 2);  // d
      a[2] = a[3] = 0;
      memcpy(a + 4, src + 192, 16);  // scales
      for (int g = 0; g < 8; ++g) {
        uint8_t* grp = lo + (b * 8 + g) * 16;
        memset(grp, 0, 16);
        uint32_t hw[2] = {0, 0};
        const int h = g / 4, m = g % 4;
        for (int l = 0; l < 32; ++l) {
          // Value 128h + 32m + l (quant/blocks.h, unpack_q6_k).
          const int nib = (src[64 * h + l + 32 * (m & 1)] >> (4 * (m >> 1))) & 0xF;
          const int two = (src[128 + 32 * h + l] >> (2 * m)) & 3;
          put_nibble(grp, l, nib);
          hw[l / 16] |= static_cast<uint32_t>(two) << q6_bit(l);
        }
        memcpy(hi + (b * 8 + g) * 8, hw, 8);
      }
      return;
    }
    default:
      return;
  }
}

// One row of `cols` values from the file's layout (`src`, row_bytes(t, cols) bytes) into `dst`
// (row_layout(t, cols).stride bytes, padding zeroed).
TS_HD void repack_row(GgmlType t, const uint8_t* src, uint8_t* dst, int64_t cols) {
  const RowLayout r = row_layout(t, cols);
  if (t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16) {
    memcpy(dst, src, r.lo);
  } else {
    const int vpb = values_per_aux_block(t), bytes = native_block_bytes(t);
    for (int64_t b = 0; b < cols / vpb; ++b) repack_block(t, src + b * bytes, b, dst, dst + r.lo, dst + r.lo + r.hi);
  }
  memset(dst + r.lo + r.hi + r.aux, 0, r.stride - r.lo - r.hi - r.aux);
}

// --- decoding: the 32 values of group g of a repacked row (the definition the kernels follow) ----

// Value i of a 16-byte lo group of 4-bit values.
TS_HD int nibble(const uint8_t* grp, int i) { return i < 16 ? grp[i] & 0xF : grp[i - 16] >> 4; }

TS_HD void decode_group(GgmlType t, const uint8_t* row, int64_t cols, int64_t g, float* out) {
  const RowLayout r = row_layout(t, cols);
  const uint8_t* hi = row + r.lo;
  const uint8_t* aux = row + r.lo + r.hi;
  const uint8_t* grp = row + g * 16;
  switch (t) {
    case GgmlType::F32:
      memcpy(out, row + g * 128, 128);
      return;
    case GgmlType::F16:
      for (int i = 0; i < 32; ++i) out[i] = half_to_float(rd16(row + g * 64 + 2 * i));
      return;
    case GgmlType::BF16:
      for (int i = 0; i < 32; ++i) out[i] = bits_to_float(static_cast<uint32_t>(rd16(row + g * 64 + 2 * i)) << 16);
      return;
    case GgmlType::Q8_0: {
      const float d = half_to_float(rd16(aux + g * 2));
      for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(static_cast<int8_t>(row[g * 32 + i]));
      return;
    }
    case GgmlType::Q4_0: {
      const float d = half_to_float(rd16(aux + g * 2));
      for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(nibble(grp, i) - 8);
      return;
    }
    case GgmlType::Q4_1: {
      const float d = half_to_float(rd16(aux + g * 4)), m = half_to_float(rd16(aux + g * 4 + 2));
      for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(nibble(grp, i)) + m;
      return;
    }
    case GgmlType::Q5_0: {
      const float d = half_to_float(rd16(aux + g * 2));
      const uint32_t qh = rd32(hi + g * 4);
      for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(static_cast<int>(nibble(grp, i) | (((qh >> q5_bit(i)) & 1) << 4)) - 16);
      return;
    }
    case GgmlType::Q5_1: {
      const float d = half_to_float(rd16(aux + g * 4)), m = half_to_float(rd16(aux + g * 4 + 2));
      const uint32_t qh = rd32(hi + g * 4);
      for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(nibble(grp, i) | (((qh >> q5_bit(i)) & 1) << 4)) + m;
      return;
    }
    case GgmlType::MXFP4: {
      const float d = e8m0_half(aux[g]);
      constexpr int8_t kValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
      for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(kValues[nibble(grp, i)]);
      return;
    }
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      const uint8_t* a = aux + (g / 8) * 16;
      int sc, mn;
      k_scale_min(a + 4, static_cast<int>(g % 8), sc, mn);
      const float d = half_to_float(rd16(a)) * static_cast<float>(sc);
      const float m = half_to_float(rd16(a + 2)) * static_cast<float>(mn);
      const uint32_t qh = t == GgmlType::Q5_K ? rd32(hi + g * 4) : 0;
      for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(nibble(grp, i) | (((qh >> q5_bit(i)) & 1) << 4)) - m;
      return;
    }
    case GgmlType::Q6_K: {
      const uint8_t* a = aux + (g / 8) * 20;
      const float d = half_to_float(rd16(a));
      const uint32_t w0 = rd32(hi + g * 8), w1 = rd32(hi + g * 8 + 4);
      for (int i = 0; i < 32; ++i) {
        const uint32_t two = ((i < 16 ? w0 : w1) >> q6_bit(i)) & 3;
        const float s = d * static_cast<float>(static_cast<int8_t>(a[4 + 2 * (g % 8) + i / 16]));
        out[i] = s * static_cast<float>(static_cast<int>(nibble(grp, i) | (two << 4)) - 32) - 0.0f;
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace ts::gpu
