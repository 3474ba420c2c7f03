// Internal: the x86 vector kernels, written once and compiled three times, by kernels_avx2.cpp,
// kernels_avx512.cpp and kernels_avx512vnni.cpp, each with its own instruction-set flags. Everything
// here has internal linkage so the three copies never merge at link time (an AVX-512 copy of an inline
// function must not end up serving the AVX2 table). Before including, a file defines:
//   TS_X86_VNNI     1: int16 dots use vpdpwssd, and 8-bit prefill panels vpdpbusd (same exact int32 sums)
//   TS_X86_WIDE     1: float-weight kernels and the decoders' float stage use 512-bit vectors
//   TS_X86_TILE_R/T rows x tokens of the matmul register tile (AVX-512 has 32 registers, AVX2 16)
//   TS_X86_MAKE     the name of the table builder to define
//
// Determinism: every output element (row r, token t) owns its accumulator and receives the same
// instructions on the same data in the same block order whatever tile it is computed in, so matmul
// equals matvec bit for bit and results do not depend on row ranges or threads.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "quant/act16.h"
#include "quant/blocks.h"
#include "quant/kernel_table.h"

namespace ts::quant {
namespace {

inline __m256i loadu256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i loadu128(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline float f16_at(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

// 32 4-bit values: element j is the low nibble of qs[j], element j + 16 its high nibble.
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i b = loadu128(qs);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
}
// 0x10 in byte j where bit j of qh is set (the fifth bit of Q5_0/Q5_1 values).
inline __m256i fifth_bits(uint32_t qh) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                          3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), spread);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
}

// --- 32-value block formats (the fast decoders below) ---------------------------------------------
struct Weights32 {
  __m256i q;  // values as int8 (unsigned for formats with a min)
  float d, m;
};

struct FQ4_0 {
  static constexpr int kBytes = layout::q4_0_bytes;
  static constexpr bool kHasMin = false;
  static void decode(const uint8_t* b, Weights32& w) {
    w.q = _mm256_sub_epi8(nibbles(b + layout::q4_0_qs), _mm256_set1_epi8(8));
    w.d = f16_at(b);
  }
};
struct FQ4_1 {
  static constexpr int kBytes = layout::q4_1_bytes;
  static constexpr bool kHasMin = true;
  static void decode(const uint8_t* b, Weights32& w) {
    w.q = nibbles(b + layout::q4_1_qs);
    w.d = f16_at(b);
    w.m = f16_at(b + layout::q4_1_m);
  }
};
struct FQ5_0 {
  static constexpr int kBytes = layout::q5_0_bytes;
  static constexpr bool kHasMin = false;
  static void decode(const uint8_t* b, Weights32& w) {
    const __m256i q = _mm256_or_si256(nibbles(b + layout::q5_0_qs), fifth_bits(load_u32(b + layout::q5_0_qh)));
    w.q = _mm256_sub_epi8(q, _mm256_set1_epi8(16));
    w.d = f16_at(b);
  }
};
struct FQ5_1 {
  static constexpr int kBytes = layout::q5_1_bytes;
  static constexpr bool kHasMin = true;
  static void decode(const uint8_t* b, Weights32& w) {
    w.q = _mm256_or_si256(nibbles(b + layout::q5_1_qs), fifth_bits(load_u32(b + layout::q5_1_qh)));
    w.d = f16_at(b);
    w.m = f16_at(b + layout::q5_1_m);
  }
};
struct FQ8_0 {
  static constexpr int kBytes = layout::q8_0_bytes;
  static constexpr bool kHasMin = false;
  static void decode(const uint8_t* b, Weights32& w) {
    w.q = loadu256(b + layout::q8_0_qs);
    w.d = f16_at(b);
  }
};
struct FMxfp4 {
  static constexpr int kBytes = layout::mxfp4_bytes;
  static constexpr bool kHasMin = false;
  static void decode(const uint8_t* b, Weights32& w) {
    __m128i lut;
    std::memcpy(&lut, kMxfp4Values, 16);
    w.q = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(lut), nibbles(b + layout::mxfp4_qs));
    w.d = e8m0_half(b[0]);
  }
};

// --- K super-block formats (the fast decoders below) --------------------------------------------
// The same eight scales (bytes 0..7) and mins (bytes 8..15) as k_scale_min, a 32-bit word at a
// time: a, b, c are bytes 0..3, 4..7, 8..11 of the packed field.
inline __m128i k_scales_mins(const uint8_t* s) {
  const uint32_t a = load_u32(s), b = load_u32(s + 4), c = load_u32(s + 8);
  constexpr uint32_t lo6 = 0x3F3F3F3F, lo4 = 0x0F0F0F0F, top2 = 0x03030303;
  const uint32_t sc_hi = (c & lo4) | (((a >> 6) & top2) << 4), mn_hi = ((c >> 4) & lo4) | (((b >> 6) & top2) << 4);
  return _mm_setr_epi32(static_cast<int>(a & lo6), static_cast<int>(sc_hi), static_cast<int>(b & lo6),
                        static_cast<int>(mn_hi));
}

struct FQ4_K {
  static constexpr int kBytes = layout::q4_k_bytes, kDmin = layout::q4_k_dmin, kScales = layout::q4_k_scales;
  static constexpr bool kOffsetIsMin = true;
  static void codes(const uint8_t* b, __m256i (&q)[8]) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    for (int j = 0; j < 4; ++j) {
      const __m256i raw = loadu256(b + layout::q4_k_qs + 32 * j);
      q[2 * j] = _mm256_and_si256(raw, lo4);
      q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), lo4);
    }
  }
};
struct FQ5_K {
  static constexpr int kBytes = layout::q5_k_bytes, kDmin = layout::q5_k_dmin, kScales = layout::q5_k_scales;
  static constexpr bool kOffsetIsMin = true;
  static void codes(const uint8_t* b, __m256i (&q)[8]) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    __m256i hb = loadu256(b + layout::q5_k_qh);  // bit 2j / 2j+1 of byte l: chunk 2j / 2j+1, value l
    for (int j = 0; j < 4; ++j) {
      const __m256i raw = loadu256(b + layout::q5_k_qs + 32 * j);
      const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, one), 4);
      const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), one), 4);
      q[2 * j] = _mm256_or_si256(_mm256_and_si256(raw, lo4), h0);
      q[2 * j + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), lo4), h1);
      hb = _mm256_srli_epi16(hb, 2);  // bits from the neighbouring byte land above bit 5: masked
    }
  }
};
struct FQ6_K {
  static constexpr int kBytes = layout::q6_k_bytes;
  static constexpr bool kOffsetIsMin = false;
  // Unsigned codes 0..63 (the stored value plus 32).
  static void codes(const uint8_t* b, __m256i (&q)[8]) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F), lo2 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const __m256i a = loadu256(b + 64 * h), c = loadu256(b + 64 * h + 32);
      const __m256i hq = loadu256(b + layout::q6_k_qh + 32 * h);
      auto high = [&](int shift) {
        return _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hq, _mm_cvtsi32_si128(shift)), lo2), 4);
      };
      q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(a, lo4), high(0));
      q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(c, lo4), high(2));
      q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), lo4), high(4));
      q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), lo4), high(6));
    }
  }
};

// --- float weights (activations F32) -------------------------------------------------------------
struct V256 {
  using T = __m256;
  static constexpr int kLanes = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load_f32(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static T load_f16(const uint8_t* p) { return _mm256_cvtph_ps(loadu128(p)); }
  static T load_bf16(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(loadu128(p)), 16));
  }
  static T from_i8(const int8_t* p) {  // kLanes int8 codes
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static T set1(float f) { return _mm256_set1_ps(f); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(T v) { return hsum(v); }
};
#if TS_X86_WIDE
// The maskz forms with a full mask are the plain instructions; GCC 12's unmasked intrinsics start
// from an "undefined" register and trip -Wuninitialized.
struct V512 {
  using T = __m512;
  static constexpr int kLanes = 16;
  static constexpr __mmask16 kAll = 0xFFFF;
  static T zero() { return _mm512_setzero_ps(); }
  static T load_f32(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static T load_f16(const uint8_t* p) { return _mm512_maskz_cvtph_ps(kAll, loadu256(p)); }
  static T load_bf16(const uint8_t* p) {
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, loadu256(p)), 16));
  }
  static T from_i8(const int8_t* p) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm512_maskz_cvtepi32_ps(kAll, _mm512_maskz_cvtepi8_epi32(kAll, q));
  }
  static T set1(float f) { return _mm512_set1_ps(f); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(T v) {
    alignas(64) float lanes[16];  // (the 512->256 cast intrinsics trip the same GCC 12 warning)
    _mm512_store_ps(lanes, v);
    return hsum(_mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8)));
  }
};
using VF = V512;
#else
using VF = V256;
#endif

enum class FloatKind { f32, f16, bf16 };

// One "block" is one vector of weights; a k that is not a multiple of the vector width ends in a
// zero-padded block (padding adds exact zeros, so it cannot change the sum).
template <FloatKind Kind>
struct FamilyFloat {
  struct Acc {
    VF::T v = VF::zero();
  };
  struct Weights {
    VF::T v;
  };
  static constexpr bool kPadTail = true;
  // A weight vector is one load (an FMA operand), so a matvec can keep 8 rows' accumulators in
  // flight, enough to hide the FMA latency while the weights stream from L2.
  static constexpr int kMatvecRows = 8;
  static constexpr int kElemBytes = Kind == FloatKind::f32 ? 4 : 2;
  static constexpr int kElems = VF::kLanes, kWBytes = kElems * kElemBytes, kXBytes = kElems * 4;

  static void decode(const uint8_t* b, Weights& w) {
    if constexpr (Kind == FloatKind::f32) w.v = VF::load_f32(b);
    else if constexpr (Kind == FloatKind::f16) w.v = VF::load_f16(b);
    else w.v = VF::load_bf16(b);
  }
  struct X {
    VF::T v;
  };
  static X load_x(const uint8_t* xb) { return {VF::load_f32(xb)}; }
  static void accumulate(const Weights& w, const X& x, Acc& a) { a.v = VF::fma(w.v, x.v, a.v); }
  static float finish(const Acc& a) { return VF::sum(a.v); }
};

// --- the tiled driver ------------------------------------------------------------------------------
template <class Fmt, int R, int T>
inline void step(const uint8_t* w, size_t ws, const uint8_t* x, size_t xs, typename Fmt::Acc (&acc)[R][T]) {
  typename Fmt::Weights wd[R];
  for (int r = 0; r < R; ++r) Fmt::decode(w + r * ws, wd[r]);
  for (int t = 0; t < T; ++t) {
    const typename Fmt::X xt = Fmt::load_x(x + t * xs);
    for (int r = 0; r < R; ++r) Fmt::accumulate(wd[r], xt, acc[r][t]);
  }
}

// R rows x T tokens; each weight block is decoded once and used for all T tokens.
template <class Fmt, int R, int T>
void tile(const uint8_t* W, size_t ws, const uint8_t* X, size_t xs, int64_t k, float* Y, size_t ys) {
  typename Fmt::Acc acc[R][T];
  const int64_t nb = k / Fmt::kElems;
  for (int64_t b = 0; b < nb; ++b) step<Fmt, R, T>(W + b * Fmt::kWBytes, ws, X + b * Fmt::kXBytes, xs, acc);
  if constexpr (Fmt::kPadTail) {
    if (const int64_t tail = k % Fmt::kElems) {
      uint8_t wpad[R][Fmt::kWBytes] = {}, xpad[T][Fmt::kXBytes] = {};
      for (int r = 0; r < R; ++r) std::memcpy(wpad[r], W + r * ws + nb * Fmt::kWBytes, tail * Fmt::kElemBytes);
      for (int t = 0; t < T; ++t) std::memcpy(xpad[t], X + t * xs + nb * Fmt::kXBytes, tail * 4);
      step<Fmt, R, T>(wpad[0], Fmt::kWBytes, xpad[0], Fmt::kXBytes, acc);
    }
  }
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < R; ++r) Y[t * ys + r] = Fmt::finish(acc[r][t]);
}

template <class Fmt, int R, int T>
void row_tiles(const uint8_t* W, size_t ws, int64_t rows, int64_t k, const uint8_t* X, size_t xs, float* Y, size_t ys) {
  int64_t r = 0;
  for (; r + R <= rows; r += R) tile<Fmt, R, T>(W + r * ws, ws, X, xs, k, Y + r, ys);
  for (; r < rows; ++r) tile<Fmt, 1, T>(W + r * ws, ws, X, xs, k, Y + r, ys);
}

inline constexpr int64_t kChunkBytes = 128 * 1024;  // a slice of W that stays in L2 across token groups

template <class Fmt>
void matmul(const uint8_t* W, size_t ws, int64_t rows, int64_t k, const uint8_t* X, size_t xs, int64_t n_tok, float* Y,
            size_t ys) {
  constexpr int R = TS_X86_TILE_R, T = TS_X86_TILE_T;
  if (n_tok == 1) return row_tiles<Fmt, Fmt::kMatvecRows, 1>(W, ws, rows, k, X, xs, Y, ys);
  const int64_t chunk = std::max<int64_t>(R, kChunkBytes / static_cast<int64_t>(std::max<size_t>(ws, 1)) / R * R);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    const uint8_t* Wc = W + r0 * ws;
    int64_t t = 0;
    for (; t + T <= n_tok; t += T) row_tiles<Fmt, R, T>(Wc, ws, n, k, X + t * xs, xs, Y + t * ys + r0, ys);
    for (; t < n_tok; ++t) row_tiles<Fmt, Fmt::kMatvecRows, 1>(Wc, ws, n, k, X + t * xs, xs, Y + t * ys + r0, ys);
  }
}

// --- fast decoders (bit-identical to dequantize_ref: the same operations per value) -------------
// Codes are unpacked by the format structs above, parked as int8 in L1, then widened to
// float; then d * q, and the offset m added or subtracted, as the reference writes it. Every product
// here is exact in float (a scale of at most 11 significant bits, f16 or a power of two, times
// integer scales and codes of at most 13 bits together), so each value is rounded once, and it makes
// no difference that GCC may contract the product and the offset into one fma.
enum class Offset { none, add, sub };

// dst[j] = d * q[j], then + or - m, for 16 int8 codes.
template <Offset Op>
inline void decode16(const int8_t* q, float d, float m, float* dst) {
  for (int j = 0; j < 16; j += VF::kLanes) {
    VF::T v = VF::mul(VF::set1(d), VF::from_i8(q + j));
    if constexpr (Op == Offset::add) v = VF::add(v, VF::set1(m));
    else if constexpr (Op == Offset::sub) v = VF::sub(v, VF::set1(m));
    VF::store(dst + j, v);
  }
}

template <bool Bf16>
void dequant_half(const uint8_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, Bf16 ? V256::load_bf16(src + 2 * i) : V256::load_f16(src + 2 * i));
  for (; i < n; ++i) dst[i] = Bf16 ? bf16_to_fp32(load_u16(src + 2 * i)) : fp16_to_fp32(load_u16(src + 2 * i));
}

// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4: one d (and m) per 32 values.
template <class F>
void dequant32(const uint8_t* src, float* dst, int64_t n) {
  constexpr Offset op = F::kHasMin ? Offset::add : Offset::none;
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    Weights32 w;
    F::decode(src + b * F::kBytes, w);
    const float m = F::kHasMin ? w.m : 0.f;
    alignas(32) int8_t q[kQK];
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), w.q);
    decode16<op>(q, w.d, m, dst);
    decode16<op>(q + 16, w.d, m, dst + 16);
  }
}

// The factors of each group of 16 values of a K super-block as dequantize_ref forms them: d * scale
// and dmin * min (exact products), the integer scales widened and multiplied like codes.
template <class F>
void k_factors(const uint8_t* b, float (&d)[16], float (&m)[16]) {
  if constexpr (F::kOffsetIsMin) {  // Q4_K/Q5_K: d at offset 0, one 6-bit scale and min per 32 values
    const __m128i sm = k_scales_mins(b + F::kScales);
    alignas(16) int8_t sc[16], mn[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(sc), _mm_unpacklo_epi8(sm, sm));
    _mm_store_si128(reinterpret_cast<__m128i*>(mn), _mm_unpackhi_epi8(sm, sm));
    decode16<Offset::none>(sc, f16_at(b), 0, d);
    decode16<Offset::none>(mn, f16_at(b + F::kDmin), 0, m);
  } else {  // Q6_K: a signed 8-bit scale per 16 values, no min
    decode16<Offset::none>(reinterpret_cast<const int8_t*>(b + layout::q6_k_scales), f16_at(b + layout::q6_k_d), 0, d);
  }
}

// Q4_K, Q5_K (value = d * q - m per group of 16) and Q6_K (d * (q - 32), no offset).
template <class F>
void dequant_k(const uint8_t* src, float* dst, int64_t n) {
  constexpr Offset op = F::kOffsetIsMin ? Offset::sub : Offset::none;
  for (int64_t b = 0; b < n / kQKK; ++b, dst += kQKK) {
    const uint8_t* blk = src + b * F::kBytes;
    __m256i q[8];
    F::codes(blk, q);
    alignas(32) int8_t qs[kQKK];
    for (int c = 0; c < 8; ++c) {
      const __m256i v = F::kOffsetIsMin ? q[c] : _mm256_sub_epi8(q[c], _mm256_set1_epi8(32));
      _mm256_store_si256(reinterpret_cast<__m256i*>(qs + 32 * c), v);
    }
    alignas(64) float d[16], m[16];
    k_factors<F>(blk, d, m);
    for (int g = 0; g < 16; ++g) decode16<op>(qs + 16 * g, d[g], F::kOffsetIsMin ? m[g] : 0.f, dst + 16 * g);
  }
}

#include "quant/kernels16_x86.h"

KernelTable build_table(const char* name) {
  KernelTable kt;
  kt.name = name;
  auto set = [&](GgmlType t, MatmulFn f) { kt.matmul[type_index(t)] = f; };
  set(GgmlType::F32, matmul<FamilyFloat<FloatKind::f32>>);
  set(GgmlType::F16, matmul<FamilyFloat<FloatKind::f16>>);
  set(GgmlType::BF16, matmul<FamilyFloat<FloatKind::bf16>>);
  kt.quantize16 = k16::quantize;
  auto set16 = [&](GgmlType t, MatmulFn f) { kt.matmul16[type_index(t)] = f; };
  set16(GgmlType::Q4_0, k16::matmul16<k16::Q4_0>);
  set16(GgmlType::Q4_1, k16::matmul16<k16::Q4_1>);
  set16(GgmlType::Q5_0, k16::matmul16<k16::Q5_0>);
  set16(GgmlType::Q5_1, k16::matmul16<k16::Q5_1>);
  set16(GgmlType::Q8_0, k16::matmul16<k16::Q8_0>);
  set16(GgmlType::MXFP4, k16::matmul16<k16::Mxfp4>);
  set16(GgmlType::Q4_K, k16::matmul16<k16::Q4_K>);
  set16(GgmlType::Q5_K, k16::matmul16<k16::Q5_K>);
  set16(GgmlType::Q6_K, k16::matmul16<k16::Q6_K>);
#if TS_X86_WIDE && TS_X86_VNNI
  auto set8 = [&](GgmlType t, MatmulFn f) { kt.matmul8[type_index(t)] = f; };
  set8(GgmlType::Q4_0, k16::matmul16<k16::Q4_0, true>);
  set8(GgmlType::Q4_1, k16::matmul16<k16::Q4_1, true>);
  set8(GgmlType::Q5_0, k16::matmul16<k16::Q5_0, true>);
  set8(GgmlType::Q5_1, k16::matmul16<k16::Q5_1, true>);
  set8(GgmlType::Q8_0, k16::matmul16<k16::Q8_0, true>);
  set8(GgmlType::MXFP4, k16::matmul16<k16::Mxfp4, true>);
  set8(GgmlType::Q4_K, k16::matmul16<k16::Q4_K, true>);
  set8(GgmlType::Q5_K, k16::matmul16<k16::Q5_K, true>);
#endif
  kt.dequant[type_index(GgmlType::F16)] = dequant_half<false>;
  kt.dequant[type_index(GgmlType::BF16)] = dequant_half<true>;
  kt.dequant[type_index(GgmlType::Q4_0)] = dequant32<FQ4_0>;
  kt.dequant[type_index(GgmlType::Q4_1)] = dequant32<FQ4_1>;
  kt.dequant[type_index(GgmlType::Q5_0)] = dequant32<FQ5_0>;
  kt.dequant[type_index(GgmlType::Q5_1)] = dequant32<FQ5_1>;
  kt.dequant[type_index(GgmlType::Q8_0)] = dequant32<FQ8_0>;
  kt.dequant[type_index(GgmlType::MXFP4)] = dequant32<FMxfp4>;
  kt.dequant[type_index(GgmlType::Q4_K)] = dequant_k<FQ4_K>;
  kt.dequant[type_index(GgmlType::Q5_K)] = dequant_k<FQ5_K>;
  kt.dequant[type_index(GgmlType::Q6_K)] = dequant_k<FQ6_K>;
  return kt;
}

}  // namespace

KernelTable TS_X86_MAKE() { return build_table(TS_X86_NAME); }

}  // namespace ts::quant
