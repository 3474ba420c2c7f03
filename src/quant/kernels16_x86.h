// Internal: the int16-activation kernels (kernels.h, "int16 activations"), written once and included
// by kernels_x86.h, so they are compiled for each x86 table with its flags and internal linkage.
//
// Every result follows the scalar definition bit for bit: per (row, token), an exact int32 sum S per
// weight group, then acc = fma(float(S), D * xd, acc) and accm = fma(M, xs, accm) group after group.
// Integer sums are exact whatever their order, so two loop structures give the same bytes:
//  - few tokens (decode): dots along k in the vector lanes, then the lane sums of 8 rows are reduced
//    into one vector (lane r = row r), and the float steps run for 8 rows at once; the 512-bit
//    tables unpack and dot two rows per instruction where the format gives codes2 (MXFP4's table
//    lookup is then one vpermw per 32 values: one-token decode +55% in quant_bench), and reduce
//    those pairs in 512-bit steps with the rows' lanes in kPairOrder (+26% one token, +37% four);
//  - many tokens (prefill): 8 rows are repacked once into a panel of (row, value pair) lanes, so one
//    vpmaddwd advances 8 rows by two values against a broadcast activation pair, for every token;
//    with 8-bit activation codes, the VNNI table's panels hold (row, value quad) byte lanes instead,
//    and one vpdpbusd advances 16 rows by four values.
#pragma once

namespace k16 {

// --- int16 dots --------------------------------------------------------------------------------
inline __m256i madd_acc(__m256i acc, __m256i a, __m256i b) {
#if TS_X86_VNNI
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

inline __m256i widen_u8(const uint8_t* p) { return _mm256_cvtepu8_epi16(loadu128(p)); }

#if TS_X86_WIDE
// Two rows in one 512-bit vector: row a's 16 values in words 0..15, row b's in 16..31.
// A format may give codes2: the codes of two rows' group g in 512-bit vectors, which the decode
// kernel then unpacks and dots a pair of rows at once with. Only MXFP4 gains from it (measured):
// the other formats' decode is bound by memory, not by unpacking.
inline __m512i madd_acc(__m512i acc, __m512i a, __m512i b) {
#if TS_X86_VNNI
  return _mm512_dpwssd_epi32(acc, a, b);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}
inline __m512i widen_u8_2(const uint8_t* a, const uint8_t* b) {
  return _mm512_cvtepu8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(a)), loadu128(b), 1));
}
inline __m512i low4(__m512i w) { return _mm512_and_si512(w, _mm512_set1_epi16(0x0F)); }
inline __m512i high4(__m512i w) { return _mm512_srli_epi16(w, 4); }
#endif
inline __m256i low4(__m256i w) { return _mm256_and_si256(w, _mm256_set1_epi16(0x0F)); }
inline __m256i high4(__m256i w) { return _mm256_srli_epi16(w, 4); }  // w holds zero-extended bytes

// 16 in byte j where bit j of `bits` is set.
inline __m256i bit4_words(uint16_t bits) {
  const __m256i sel = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
                                        static_cast<int16_t>(0x8000));
  const __m256i hit = _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16(static_cast<int16_t>(bits)), sel), sel);
  return _mm256_and_si256(hit, _mm256_set1_epi16(16));
}

// Lane sums of 8 rows' vectors into one vector (lane r = row r), exact (integer adds), in two
// steps: rows 2i and 2i+1 first, summed in pairs of lanes ...
inline __m256i reduce_pair(__m256i s0, __m256i s1) {
  return _mm256_add_epi32(_mm256_unpacklo_epi32(s0, s1), _mm256_unpackhi_epi32(s0, s1));
}
// ... then the rest: lane r of the result is the sum of the 8 lanes of row r.
inline __m256i reduce8_pairs(const __m256i (&a)[4]) {
  const __m256i lo = _mm256_add_epi32(_mm256_unpacklo_epi64(a[0], a[1]), _mm256_unpackhi_epi64(a[0], a[1]));
  const __m256i hi = _mm256_add_epi32(_mm256_unpacklo_epi64(a[2], a[3]), _mm256_unpackhi_epi64(a[2], a[3]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31));
}

#if TS_X86_WIDE
// The same for 4 two-row vectors (s[i]: row 2i in lanes 0..7, row 2i+1 in 8..15), in 512-bit steps
// (12 instructions where reduce_pair and reduce8_pairs take 26): lane j of the result is the sum of
// row kPairOrder[j]'s lanes, rows 0, 2, 4, 6 then 1, 3, 5, 7.
inline __m256i reduce8_pairs512(const __m512i (&s)[4]) {
  // (the maskz forms: GCC 12 warns that the plain ones read an uninitialised value)
  auto pair32 = [](__m512i x, __m512i y) {
    return _mm512_add_epi32(_mm512_maskz_unpacklo_epi32(0xFFFF, x, y), _mm512_maskz_unpackhi_epi32(0xFFFF, x, y));
  };
  const __m512i a01 = pair32(s[0], s[1]), a23 = pair32(s[2], s[3]);
  // 128-bit lane q: the sums of lane q of s[0], s[1], s[2], s[3]
  const __m512i b = _mm512_add_epi32(_mm512_maskz_unpacklo_epi64(0xFF, a01, a23), _mm512_maskz_unpackhi_epi64(0xFF, a01, a23));
  // lanes 0 + 1 (the first rows of the pairs) and 2 + 3 (the second rows)
  const __m512i c = _mm512_add_epi32(_mm512_maskz_shuffle_i32x4(0xFFFF, b, b, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_maskz_shuffle_i32x4(0xFFFF, b, b, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_maskz_extracti64x4_epi64(0xF, c, 0);
}
inline const __m256i kPairOrder = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
inline const __m256i kPairOrderInverse = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
#endif

// 8x8 transpose of 32-bit elements: out[j] lane r = in[r] lane j.
inline void transpose8(const __m256i (&in)[8], __m256i (&out)[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    out[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
    out[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
  }
}
inline void transpose8(const __m256 (&in)[8], __m256 (&out)[8]) {
  __m256i a[8], b[8];
  for (int i = 0; i < 8; ++i) a[i] = _mm256_castps_si256(in[i]);
  transpose8(a, b);
  for (int i = 0; i < 8; ++i) out[i] = _mm256_castsi256_ps(b[i]);
}

// f16 values at p[r] + off for 8 rows, as floats (lane r).
inline __m256 gather_f16(const uint8_t* const* p, int off) {
  __m128i h = _mm_setzero_si128();
  h = _mm_insert_epi16(h, load_u16(p[0] + off), 0);
  h = _mm_insert_epi16(h, load_u16(p[1] + off), 1);
  h = _mm_insert_epi16(h, load_u16(p[2] + off), 2);
  h = _mm_insert_epi16(h, load_u16(p[3] + off), 3);
  h = _mm_insert_epi16(h, load_u16(p[4] + off), 4);
  h = _mm_insert_epi16(h, load_u16(p[5] + off), 5);
  h = _mm_insert_epi16(h, load_u16(p[6] + off), 6);
  h = _mm_insert_epi16(h, load_u16(p[7] + off), 7);
  return _mm256_cvtph_ps(h);
}

// --- formats -------------------------------------------------------------------------------------
// Each format gives, for one weight block: the int16 codes of group g (kVecs vectors of 16 values in
// order) and, for 8 rows at once, each group's factor D and offset M as vectors (lane = row).
// Formats with groups of 32 also give kU8Bias, the least value that makes every code non-negative
// and at most 255 (for the 8-bit panels below).
template <int Bytes, int Elems, int Group, MinSign Sign>
struct Shape {
  static constexpr int kBytes = Bytes, kElems = Elems, kGroup = Group, kGroups = Elems / Group, kVecs = Group / 16;
  static constexpr MinSign kSign = Sign;
};

struct Q4_0 : Shape<layout::q4_0_bytes, kQK, kQK, MinSign::none> {
  static constexpr int kU8Bias = 8;
  static constexpr int kNibbleQs = layout::q4_0_qs;
  alignas(64) static constexpr int16_t kNibbleWords[32] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
  static void codes(const uint8_t* b, int, __m256i (&c)[2]) {
    const __m256i w = widen_u8(b + layout::q4_0_qs), eight = _mm256_set1_epi16(8);
    c[0] = _mm256_sub_epi16(low4(w), eight);
    c[1] = _mm256_sub_epi16(high4(w), eight);
  }
  static void factors8(const uint8_t* const* p, __m256* D, __m256*) { D[0] = gather_f16(p, 0); }
};
struct Q4_1 : Shape<layout::q4_1_bytes, kQK, kQK, MinSign::add> {
  static constexpr int kU8Bias = 0;
  static constexpr int kNibbleQs = layout::q4_1_qs;
  alignas(64) static constexpr int16_t kNibbleWords[32] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  static void codes(const uint8_t* b, int, __m256i (&c)[2]) {
    const __m256i w = widen_u8(b + layout::q4_1_qs);
    c[0] = low4(w);
    c[1] = high4(w);
  }
  static void factors8(const uint8_t* const* p, __m256* D, __m256* M) {
    D[0] = gather_f16(p, 0);
    M[0] = gather_f16(p, layout::q4_1_m);
  }
};
struct Q5_0 : Shape<layout::q5_0_bytes, kQK, kQK, MinSign::none> {
  static constexpr int kU8Bias = 16;
  static void codes(const uint8_t* b, int, __m256i (&c)[2]) {
    const __m256i w = widen_u8(b + layout::q5_0_qs), sixteen = _mm256_set1_epi16(16);
    const uint32_t qh = load_u32(b + layout::q5_0_qh);
    c[0] = _mm256_sub_epi16(_mm256_or_si256(low4(w), bit4_words(static_cast<uint16_t>(qh))), sixteen);
    c[1] = _mm256_sub_epi16(_mm256_or_si256(high4(w), bit4_words(static_cast<uint16_t>(qh >> 16))), sixteen);
  }
  static void factors8(const uint8_t* const* p, __m256* D, __m256*) { D[0] = gather_f16(p, 0); }
};
struct Q5_1 : Shape<layout::q5_1_bytes, kQK, kQK, MinSign::add> {
  static constexpr int kU8Bias = 0;
  static void codes(const uint8_t* b, int, __m256i (&c)[2]) {
    const __m256i w = widen_u8(b + layout::q5_1_qs);
    const uint32_t qh = load_u32(b + layout::q5_1_qh);
    c[0] = _mm256_or_si256(low4(w), bit4_words(static_cast<uint16_t>(qh)));
    c[1] = _mm256_or_si256(high4(w), bit4_words(static_cast<uint16_t>(qh >> 16)));
  }
  static void factors8(const uint8_t* const* p, __m256* D, __m256* M) {
    D[0] = gather_f16(p, 0);
    M[0] = gather_f16(p, layout::q5_1_m);
  }
};
struct Q8_0 : Shape<layout::q8_0_bytes, kQK, kQK, MinSign::none> {
  static constexpr int kU8Bias = 128;
  static void codes(const uint8_t* b, int, __m256i (&c)[2]) {
    c[0] = _mm256_cvtepi8_epi16(loadu128(b + layout::q8_0_qs));
    c[1] = _mm256_cvtepi8_epi16(loadu128(b + layout::q8_0_qs + 16));
  }
  static void factors8(const uint8_t* const* p, __m256* D, __m256*) { D[0] = gather_f16(p, 0); }
};
struct Mxfp4 : Shape<layout::mxfp4_bytes, kQK, kQK, MinSign::none> {
  static constexpr int kU8Bias = 12;
  static constexpr int kNibbleQs = layout::mxfp4_qs;
  alignas(64) static constexpr int16_t kNibbleWords[32] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  static void codes(const uint8_t* b, int, __m256i (&c)[2]) {
    __m128i lut;
    std::memcpy(&lut, kMxfp4Values, 16);
    const __m256i table = _mm256_broadcastsi128_si256(lut), w = widen_u8(b + layout::mxfp4_qs);
    // The index words have a zero high byte, which looks up value 0: sign-extend the low byte.
    auto value = [&](__m256i idx) { return _mm256_srai_epi16(_mm256_slli_epi16(_mm256_shuffle_epi8(table, idx), 8), 8); };
    c[0] = value(low4(w));
    c[1] = value(high4(w));
  }
#if TS_X86_WIDE
  // vpermw looks words up in a table of words: one instruction per 32 values, no sign fix-up.
  static void codes2(const uint8_t* a, const uint8_t* b, int, __m512i (&c)[2]) {
    const __m512i table = _mm512_load_si512(kNibbleWords), w = widen_u8_2(a + layout::mxfp4_qs, b + layout::mxfp4_qs);
    c[0] = _mm512_permutexvar_epi16(low4(w), table);
    c[1] = _mm512_permutexvar_epi16(high4(w), table);
  }
#endif
  // Decode without 512-bit tables: index i ^ 15 looks up value(i) + kBias (0..24), so the zero high
  // byte of each index word looks up entry 0 (code 15, value -12 + 12 = 0) and the words come out
  // as the biased values with no sign fix-up: 6 instructions per 32 values instead of 9, and half as
  // many on the shuffle and shift ports. The caller takes kBias * sum(q) back from each block's exact
  // integer sum, so the results keep their bytes.
  static constexpr int kBias = 12;
  static void biased_codes(const uint8_t* b, __m256i (&c)[2]) {
    alignas(16) static constexpr int8_t kLut[16] = {0, 4, 6, 8, 9, 10, 11, 12, 24, 20, 18, 16, 15, 14, 13, 12};
    const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(kLut)));
    const __m256i w = widen_u8(b + layout::mxfp4_qs), m = _mm256_set1_epi16(0x0F);
    c[0] = _mm256_shuffle_epi8(table, _mm256_andnot_si256(w, m));
    c[1] = _mm256_shuffle_epi8(table, _mm256_andnot_si256(_mm256_srli_epi16(w, 4), m));
  }
  // e8m0_half for 8 rows: (e - 1) << 23, or 0x00200000 << e for the subnormal e = 0, 1. The 8 bytes
  // are gathered in a general register (its ports are idle here), not lane by lane.
  static void factors8(const uint8_t* const* p, __m256* D, __m256*) {
    uint64_t bytes = 0;
    for (int r = 0; r < 8; ++r) bytes |= static_cast<uint64_t>(p[r][0]) << (8 * r);
    const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    D[0] = _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small));
  }
};

// Q4_K/Q5_K factors: D = d * scale, M = dmin * min per group of 32 (exact products), for 8 rows.
template <int DminOff, int ScalesOff>
inline void k_factors8(const uint8_t* const* p, __m256* D, __m256* M) {
  __m256 d[8], m[8];
  for (int r = 0; r < 8; ++r) {
    const __m128i sm = k_scales_mins(p[r] + ScalesOff);  // bytes 0..7 scales, 8..15 mins
    const __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm));
    const __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(sm, sm)));
    d[r] = _mm256_mul_ps(_mm256_set1_ps(f16_at(p[r])), sc);
    m[r] = _mm256_mul_ps(_mm256_set1_ps(f16_at(p[r] + DminOff)), mn);
  }
  __m256 dt[8], mt[8];
  transpose8(d, dt);
  transpose8(m, mt);
  for (int g = 0; g < 8; ++g) {
    D[g] = dt[g];
    M[g] = mt[g];
  }
}

struct Q4_K : Shape<layout::q4_k_bytes, kQKK, kQK, MinSign::sub> {
  static constexpr int kU8Bias = 0;
  static void codes(const uint8_t* b, int g, __m256i (&c)[2]) {
    const uint8_t* qs = b + layout::q4_k_qs + 32 * (g / 2);
    const __m256i w0 = widen_u8(qs), w1 = widen_u8(qs + 16);
    c[0] = g % 2 ? high4(w0) : low4(w0);
    c[1] = g % 2 ? high4(w1) : low4(w1);
  }
  static void factors8(const uint8_t* const* p, __m256* D, __m256* M) {
    k_factors8<layout::q4_k_dmin, layout::q4_k_scales>(p, D, M);
  }
};
struct Q5_K : Shape<layout::q5_k_bytes, kQKK, kQK, MinSign::sub> {
  static constexpr int kU8Bias = 0;
  static void codes(const uint8_t* b, int g, __m256i (&c)[2]) {
    const uint8_t* qs = b + layout::q5_k_qs + 32 * (g / 2);
    const __m128i shift = _mm_cvtsi32_si128(g);  // bit g of qh[l] is the fifth bit of value l of group g
    for (int h = 0; h < 2; ++h) {
      const __m256i w = widen_u8(qs + 16 * h);
      const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(widen_u8(b + layout::q5_k_qh + 16 * h), shift),
                                          _mm256_set1_epi16(1));
      c[h] = _mm256_or_si256(g % 2 ? high4(w) : low4(w), _mm256_slli_epi16(hb, 4));
    }
  }
  static void factors8(const uint8_t* const* p, __m256* D, __m256* M) {
    k_factors8<layout::q5_k_dmin, layout::q5_k_scales>(p, D, M);
  }
};
struct Q6_K : Shape<layout::q6_k_bytes, kQKK, 16, MinSign::none> {
  // Group g (16 values): half h = g / 8, m = (g % 8) / 2, l0 = 16 * (g % 2); see unpack_q6_k.
  static void codes(const uint8_t* b, int g, __m256i (&c)[1]) {
    const int h = g / 8, m = (g % 8) / 2, l0 = 16 * (g % 2);
    const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(widen_u8(b + 64 * h + 32 * (m & 1) + l0), _mm_cvtsi32_si128(4 * (m >> 1))),
                                        _mm256_set1_epi16(0x0F));
    const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(widen_u8(b + layout::q6_k_qh + 32 * h + l0), _mm_cvtsi32_si128(2 * m)),
                                        _mm256_set1_epi16(3));
    c[0] = _mm256_sub_epi16(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), _mm256_set1_epi16(32));
  }
  static void factors8(const uint8_t* const* p, __m256* D, __m256*) {
    __m256 lo[8], hi[8];
    for (int r = 0; r < 8; ++r) {
      const __m128i sc = loadu128(p[r] + layout::q6_k_scales);
      const __m256 d = _mm256_set1_ps(f16_at(p[r] + layout::q6_k_d));
      lo[r] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)));
      hi[r] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(sc, sc))));
    }
    __m256 a[8], b2[8];
    transpose8(lo, a);
    transpose8(hi, b2);
    for (int g = 0; g < 8; ++g) {
      D[g] = a[g];
      D[g + 8] = b2[g];
    }
  }
};

// --- activations ---------------------------------------------------------------------------------
// quantize_act16_ref with vectors: the same float operations per value (|x| max, one division, one
// product rounded to nearest even), so the same bytes.
inline void quantize(const float* x, int64_t n_blocks, int32_t max_code, int16_t* q, float* d, float* s, int32_t* sum) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK, q += kQK) {
    __m256 v[4], amax = _mm256_setzero_ps();
    __m256 nan = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(x + 8 * i);
      amax = _mm256_max_ps(amax, _mm256_and_ps(v[i], abs_mask));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[i], v[i], _CMP_UNORD_Q));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float a = _mm_cvtss_f32(m4);
    if (_mm256_movemask_ps(nan) != 0 || !std::isfinite(a)) {
      std::memset(q, 0, kQK * sizeof(int16_t));
      d[b] = s[b] = NAN;
      sum[b] = 0;
      continue;
    }
    const __m256 id = _mm256_set1_ps(a != 0 ? static_cast<float>(max_code) / a : 0.0f);
    __m256i qi[4];
    for (int i = 0; i < 4; ++i) qi[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
    // packs works within 128-bit lanes: the permute puts the 16 values of each pair back in order
    const __m256i p0 = _mm256_permute4x64_epi64(_mm256_packs_epi32(qi[0], qi[1]), 0xD8);
    const __m256i p1 = _mm256_permute4x64_epi64(_mm256_packs_epi32(qi[2], qi[3]), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), p0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 16), p1);
    const __m256i sum4 = _mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3]));
    sum[b] = hsum_i32(sum4);
    d[b] = a / static_cast<float>(max_code);
    s[b] = d[b] * static_cast<float>(sum[b]);
  }
}

// --- decode: 8 rows, one token, dots along k -------------------------------------------------------
template <class F>
inline __m256 finish(__m256 acc, __m256 accm) {
  if constexpr (F::kSign == MinSign::add) return _mm256_add_ps(acc, accm);
  else if constexpr (F::kSign == MinSign::sub) return _mm256_sub_ps(acc, accm);
  else return acc;
}

inline void store_rows(float* y, __m256 v, int n) {
  if (n == 8) return _mm256_storeu_ps(y, v);
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  std::memcpy(y, tmp, static_cast<size_t>(n) * sizeof(float));
}

// The caller's next rows, fetched into the cache while the current ones compute, a slice per block:
// rows of a few hundred bytes are too short for the hardware prefetcher to learn 8 or 16 interleaved
// streams, and both decode and panel building wait on memory otherwise. Up to kAheadToL1Bytes the
// next rows go to L1, longer ones to L2 only: 8 rows of 2880 Q8_0 values (24 KiB) prefetched into a
// 32 KiB L1 evict the rows being read (AVX2 host, one thread: quant_bench Matvecx16/Q8_0 13.7 ->
// 25.5 GB/s; synthesized 20b tg16 8.9 -> 10.7 tok/s), while short rows gain from L1 (all to L2:
// SmolLM2's 2.9-4.9 KiB groups tg128 15-20% slower, the mini's 8.7 KiB Q8_0 groups about 4%).
inline constexpr size_t kAheadToL1Bytes = 16384;
class Ahead {
 public:
  Ahead(const uint8_t* next, size_t bytes, int64_t n_blocks)
      : next_(next), slice_(next ? (bytes + static_cast<size_t>(n_blocks) - 1) / static_cast<size_t>(n_blocks) : 0),
        to_l2_(bytes > kAheadToL1Bytes) {}
  void fetch(int64_t blk) const {
    for (size_t o = 0; o < slice_; o += 64) {
      const char* a = reinterpret_cast<const char*>(next_ + static_cast<size_t>(blk) * slice_ + o);
      if (to_l2_) _mm_prefetch(a, _MM_HINT_T1);
      else _mm_prefetch(a, _MM_HINT_T0);
    }
  }

 private:
  const uint8_t* next_ = nullptr;
  size_t slice_ = 0;
  bool to_l2_ = false;
};

// Formats with biased_codes (where there is no codes2) decode and build panels with them, and take
// kBias * (the activation block's sum of q) back from each block's sum.
template <class F>
constexpr bool kBiasedDecode = !TS_X86_WIDE && requires(__m256i (&c)[2]) { F::biased_codes(nullptr, c); };

// Rows p[0..7] (pointers to the rows' first blocks; unused rows repeat a valid one) times T
// activation rows; writes the first n results of token t to y[t], fetching `ahead` meanwhile.

template <class F, int T>
void rows8_tokens(const uint8_t* const* p, int64_t k, const Act16Row* x, float* const* y, int n, const Ahead& ahead) {
  __m256 acc[T], accm[T];
  for (int t = 0; t < T; ++t) acc[t] = accm[t] = _mm256_setzero_ps();
  const int64_t n_blocks = k / F::kElems;
  // Formats with codes2 keep their accumulators' lanes in kPairOrder (rows 0, 2, 4, 6, 1, 3, 5, 7).
  [[maybe_unused]] constexpr bool kPairs = TS_X86_WIDE && requires(__m512i (&c)[F::kVecs]) { F::codes2(p[0], p[1], 0, c); };
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    ahead.fetch(blk);
    const uint8_t* bp[8];
    for (int r = 0; r < 8; ++r) bp[r] = p[r] + blk * F::kBytes;
    __m256 D[F::kGroups], M[F::kGroups];
    F::factors8(bp, D, M);
    for (int g = 0; g < F::kGroups; ++g) {
      const int64_t e = blk * F::kElems + g * F::kGroup, b = e / kQK;
      // Rows go in pairs: a pair's codes are unpacked once, into registers, and dotted with every
      // token; a[t][i] keeps the pair's lanes summed in pairs (the first step of reduce8).
      __m256i a[T][4], sums[T];
#if TS_X86_WIDE
      if constexpr (kPairs) {
        __m512i xw[T][F::kVecs];  // each token's values in both halves
        for (int t = 0; t < T; ++t)
          for (int v = 0; v < F::kVecs; ++v)
            xw[t][v] = _mm512_maskz_broadcast_i64x4(0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].q + e) + v));
        __m512i s[T][4];
        for (int i = 0; i < 4; ++i) {
          __m512i c[F::kVecs];
          F::codes2(bp[2 * i], bp[2 * i + 1], g, c);
          for (int t = 0; t < T; ++t) {
            s[t][i] = _mm512_madd_epi16(c[0], xw[t][0]);
            for (int v = 1; v < F::kVecs; ++v) s[t][i] = madd_acc(s[t][i], c[v], xw[t][v]);
          }
        }
        for (int t = 0; t < T; ++t) sums[t] = reduce8_pairs512(s[t]);
        D[g] = _mm256_permutevar8x32_ps(D[g], kPairOrder);
      } else
#endif
      {
      for (int i = 0; i < 4; ++i) {
        __m256i c0[F::kVecs], c1[F::kVecs];
        if constexpr (kBiasedDecode<F>) {
          F::biased_codes(bp[2 * i], c0);
          F::biased_codes(bp[2 * i + 1], c1);
        } else {
          F::codes(bp[2 * i], g, c0);
          F::codes(bp[2 * i + 1], g, c1);
        }
        for (int t = 0; t < T; ++t) {
          const auto* xp = reinterpret_cast<const __m256i*>(x[t].q + e);
          __m256i xv = _mm256_loadu_si256(xp);
          __m256i s0 = _mm256_madd_epi16(c0[0], xv), s1 = _mm256_madd_epi16(c1[0], xv);
          for (int v = 1; v < F::kVecs; ++v) {
            xv = _mm256_loadu_si256(xp + v);
            s0 = madd_acc(s0, c0[v], xv);
            s1 = madd_acc(s1, c1[v], xv);
          }
          a[t][i] = reduce_pair(s0, s1);
        }
      }
      for (int t = 0; t < T; ++t) {
        sums[t] = reduce8_pairs(a[t]);
        if constexpr (kBiasedDecode<F>) sums[t] = _mm256_sub_epi32(sums[t], _mm256_set1_epi32(F::kBias * x[t].sum[b]));
      }
      }
      for (int t = 0; t < T; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[t]), _mm256_mul_ps(D[g], _mm256_set1_ps(x[t].d[b])), acc[t]);
        if constexpr (F::kSign != MinSign::none) accm[t] = _mm256_fmadd_ps(M[g], _mm256_set1_ps(x[t].s[b]), accm[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
#if TS_X86_WIDE
    if constexpr (kPairs) acc[t] = _mm256_permutevar8x32_ps(acc[t], kPairOrderInverse);
#endif
    store_rows(y[t], finish<F>(acc[t], accm[t]), n);
  }
}

// --- prefill: row panels, (row, pair) lanes ------------------------------------------------------
// A panel holds kRows rows (16 in the 512-bit tables, 8 otherwise): for each pair of values (k/2 of
// them) one vector of kRows rows x 2 int16 (with 16 rows: rows 0..7 in the low half, 8..15 in the
// high one); then the factors, k/kGroup vectors of D and (with an offset) of M, one float per row.
// The lanes are rows, so a tile needs no horizontal sums, and each lane's float steps are those of
// the scalar definition whatever the vector width: the 512-bit panels give the same bytes.
#if TS_X86_WIDE
struct PanelVec {
  static constexpr int kRows = 16;
  using I = __m512i;
  using V = __m512;
  static I load(const I* p) { return _mm512_load_si512(p); }
  static I broadcast(int32_t v) { return _mm512_set1_epi32(v); }
  static I zero() { return _mm512_setzero_si512(); }
  static I madd(I acc, I a, I b) { return madd_acc(acc, a, b); }
  static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static V fzero() { return _mm512_setzero_ps(); }
  static V loadf(const float* p) { return _mm512_load_ps(p); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V cvt(I s) { return _mm512_maskz_cvtepi32_ps(0xFFFF, s); }  // maskz: GCC 12 warns on the plain form
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static void store(float* y, V v, int n) { _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << n) - 1), v); }
};
#else
struct PanelVec {
  static constexpr int kRows = 8;
  using I = __m256i;
  using V = __m256;
  static I load(const I* p) { return _mm256_load_si256(p); }
  static I broadcast(int32_t v) { return _mm256_set1_epi32(v); }
  static I zero() { return _mm256_setzero_si256(); }
  // The sum is written in place: with 8 accumulators, 2 weight vectors and 4 broadcasts in 16
  // registers, GCC 12 otherwise adds into the product's register and copies it back, 8 copies in
  // 33 instructions per pair (quant_bench Matmul64x16/Q4_1/avx2 2.89 / 2.86 -> 3.26 / 3.10k tok/s
  // without them).
  static I madd(I acc, I a, I b) {
    const I p = _mm256_madd_epi16(a, b);
    asm("vpaddd %1, %0, %0" : "+x"(acc) : "x"(p));
    return acc;
  }
  static I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static V fzero() { return _mm256_setzero_ps(); }
  static V loadf(const float* p) { return _mm256_load_ps(p); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V cvt(I s) { return _mm256_cvtepi32_ps(s); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static void store(float* y, V v, int n) { store_rows(y, v, n); }
};
#endif
inline constexpr int kPanelRows = PanelVec::kRows;
inline constexpr int kHalves = kPanelRows / 8;  // 8-row halves per panel vector

template <class F>
size_t panel_bytes(int64_t k) {
  const int64_t groups = k / F::kGroup;
  return static_cast<size_t>(k / 2 + groups * (F::kSign == MinSign::none ? 1 : 2)) * sizeof(typename PanelVec::I);
}

// Rows p[0..7] into 8-row half `half` of a panel; with kBiasedDecode<F>, their values plus F::kBias
// (fewer instructions to build, which counts where an expert sees few tokens; one subtraction per
// group and token in panel_tile).
template <class F>
void build_panel(const uint8_t* const* p, int64_t k, __m256i* panel, int half, const Ahead& ahead) {
  const int64_t groups = k / F::kGroup;
  auto* D = reinterpret_cast<__m256*>(panel + k / 2 * kHalves);
  __m256* M = D + groups * kHalves;
  for (int64_t blk = 0; blk < k / F::kElems; ++blk) {
    ahead.fetch(blk);
    const uint8_t* bp[8];
    for (int r = 0; r < 8; ++r) bp[r] = p[r] + blk * F::kBytes;
    __m256 d[F::kGroups], m[F::kGroups];
    F::factors8(bp, d, m);
    for (int g = 0; g < F::kGroups; ++g) {
      const int64_t gi = blk * F::kGroups + g;
      _mm256_store_ps(reinterpret_cast<float*>(D + gi * kHalves + half), d[g]);
      if constexpr (F::kSign != MinSign::none) _mm256_store_ps(reinterpret_cast<float*>(M + gi * kHalves + half), m[g]);
      __m256i c[8][F::kVecs];
      for (int r = 0; r < 8; ++r) {
        if constexpr (kBiasedDecode<F>) F::biased_codes(bp[r], c[r]);
        else F::codes(bp[r], g, c[r]);
      }
      for (int v = 0; v < F::kVecs; ++v) {
        __m256i rows[8], pairs[8];
        for (int r = 0; r < 8; ++r) rows[r] = c[r][v];
        transpose8(rows, pairs);
        const int64_t pair0 = (blk * F::kElems + g * F::kGroup + 16 * v) / 2;
        for (int j = 0; j < 8; ++j) _mm256_store_si256(panel + (pair0 + j) * kHalves + half, pairs[j]);
      }
    }
  }
}

#if TS_X86_WIDE
// Formats whose 32 values are the nibbles of 16 bytes (value l low in byte l, value l + 16 high), each
// looked up in a 16-entry word table (kNibbleWords): Q4_0, Q4_1, MXFP4.
template <class F>
concept NibbleTable = requires { F::kNibbleQs; F::kNibbleWords; };

// The same panel as two build_panel halves, 16 rows at a time: the rows' byte pairs (q[2j], q[2j+1])
// are transposed as words (two vpermt2w and a blend per two pairs j), then each word's low nibbles
// are pair j and its high nibbles pair j + 8, widened and looked up by vpermw: about 90 instructions
// per block of 16 rows where the halves take about 220 (8x8 transposes of unpacked codes). Building
// counts where an expert sees few tokens per chunk (perf, the mini's pp512: 13% of the time). Zen 4,
// one thread, quant_bench Matmul8x16/avx512-vnni: MXFP4 3.05 -> 3.3k tok/s, Q4_1 2.6 -> 3.1k; with
// the rows fetched ahead (Ahead) 3.75k and 3.3k.
// Word q of build_panel16's output m (indices for m = 0; m adds 2 * m), in 128-bit lane L = q / 8:
// row r = 4L + q % 4, pair j = 2m + q % 8 / 4, so that unpacking the lanes' low and high 8 bytes
// with zeros gives pairs 2m and 2m + 1 of rows 0..15 in order. Rows 0..7 come from (A, B) (4 rows of
// 8 words each), rows 8..15 from (C, E) with the same indices.
alignas(64) inline constexpr std::array<int16_t, 32> kPanel16Words = [] {
  std::array<int16_t, 32> w{};
  for (int q = 0; q < 32; ++q) w[q] = static_cast<int16_t>((q / 8 % 2 ? 32 : 0) + 8 * (q % 4) + q % 8 / 4);
  return w;
}();

// Block blk of 16 rows p[0..15] of a NibbleTable format, fetching `ahead` meanwhile: the factors of
// both 8-row halves into D (and M), and the rows' code bytes, four rows per vector (128-bit lane L
// of rows4[i]: row 4i + L).
template <class F>
  requires NibbleTable<F>
void nibble_block16(const uint8_t* const* p, int64_t blk, __m256* D, __m256* M, const Ahead& ahead, __m512i (&rows4)[4]) {
  const uint8_t* bp[16];
  for (int r = 0; r < 16; ++r) bp[r] = p[r] + blk * F::kBytes;
  ahead.fetch(blk);
  for (int h = 0; h < 2; ++h) {
    __m256 d[1], m[1];
    F::factors8(bp + 8 * h, d, m);
    _mm256_store_ps(reinterpret_cast<float*>(D + blk * kHalves + h), d[0]);
    if constexpr (F::kSign != MinSign::none) _mm256_store_ps(reinterpret_cast<float*>(M + blk * kHalves + h), m[0]);
  }
  for (int i = 0; i < 4; ++i) {
    const uint8_t* const* q = bp + 4 * i;
    __m512i v = _mm512_castsi128_si512(loadu128(q[0] + F::kNibbleQs));
    v = _mm512_inserti32x4(v, loadu128(q[1] + F::kNibbleQs), 1);
    v = _mm512_inserti32x4(v, loadu128(q[2] + F::kNibbleQs), 2);
    rows4[i] = _mm512_inserti32x4(v, loadu128(q[3] + F::kNibbleQs), 3);
  }
}

template <class F>
  requires NibbleTable<F>
void build_panel16(const uint8_t* const* p, int64_t k, __m512i* panel, const Ahead& ahead) {
  const int64_t groups = k / F::kGroup;
  auto* D = reinterpret_cast<__m256*>(panel + k / 2);
  __m256* M = D + groups * kHalves;
  const __m512i table = _mm512_load_si512(F::kNibbleWords), nibble = _mm512_set1_epi16(0x0F);
  const __m512i zero = _mm512_setzero_si512(), idx0 = _mm512_load_si512(kPanel16Words.data());
  for (int64_t blk = 0; blk < groups; ++blk) {
    __m512i rows4[4];
    nibble_block16<F>(p, blk, D, M, ahead, rows4);
    __m512i* out = panel + blk * (kQK / 2);
    for (int m = 0; m < 4; ++m) {
      const __m512i idx = _mm512_add_epi16(idx0, _mm512_set1_epi16(static_cast<int16_t>(2 * m)));
      const __m512i words = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_permutex2var_epi16(rows4[0], idx, rows4[1]),
                                                    _mm512_permutex2var_epi16(rows4[2], idx, rows4[3]));
      for (int half = 0; half < 2; ++half) {
        const __m512i w = half ? _mm512_unpackhi_epi8(words, zero) : _mm512_unpacklo_epi8(words, zero);
        _mm512_store_si512(out + 2 * m + half, _mm512_permutexvar_epi16(_mm512_and_si512(w, nibble), table));
        _mm512_store_si512(out + 2 * m + half + 8, _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 4), table));
      }
    }
  }
}
#endif

#if TS_X86_WIDE && TS_X86_VNNI
// --- prefill with 8-bit activation codes (ActCodes::int8: |q| <= 127) ------------------------------
// The same contract and bytes as the int16 panels (the integer sums are exact either way), with
// twice the products per instruction: one vpdpbusd advances 16 rows by four values against a
// broadcast group of four activation bytes. vpdpbusd multiplies unsigned bytes by signed ones, so
// the panel holds each code plus F::kU8Bias, and each group's sum starts at -kU8Bias * (the block's
// sum of q): the bias comes back out exactly. The panel: k/4 vectors of 16 rows x 4 bytes (rows
// 0..7 in the low half), then the factors as in the int16 panel.
template <class F>
concept Panel8 = F::kGroup == kQK && requires { F::kU8Bias; };

template <class F>
size_t panel8_bytes(int64_t k) {
  return static_cast<size_t>(k / 4 + k / kQK * (F::kSign == MinSign::none ? 1 : 2)) * sizeof(__m512i);
}

template <class F>
  requires Panel8<F>
void build_panel8(const uint8_t* const* p, int64_t k, __m512i* panel, const Ahead& ahead) {
  const int64_t groups = k / kQK;
  auto* D = reinterpret_cast<__m256*>(panel + k / 4);
  __m256* M = D + groups * kHalves;
  const __m256i bias = _mm256_set1_epi16(F::kU8Bias);
  for (int64_t blk = 0; blk < k / F::kElems; ++blk) {
    const uint8_t* bp[16];
    for (int r = 0; r < 16; ++r) bp[r] = p[r] + blk * F::kBytes;
    ahead.fetch(blk);
    __m256 d[2][F::kGroups], m[2][F::kGroups];
    F::factors8(bp, d[0], m[0]);
    F::factors8(bp + 8, d[1], m[1]);
    for (int g = 0; g < F::kGroups; ++g) {
      const int64_t gi = blk * F::kGroups + g;
      for (int h = 0; h < 2; ++h) {
        _mm256_store_ps(reinterpret_cast<float*>(D + gi * kHalves + h), d[h][g]);
        if constexpr (F::kSign != MinSign::none) _mm256_store_ps(reinterpret_cast<float*>(M + gi * kHalves + h), m[h][g]);
      }
      __m256i bytes[2][8], quads[2][8];  // per row its 32 biased codes; per quad j its 8 rows
      for (int r = 0; r < 16; ++r) {
        __m256i c[2];
        F::codes(bp[r], g, c);
        const __m128i b0 = _mm256_maskz_cvtepi16_epi8(0xFFFF, _mm256_add_epi16(c[0], bias));
        const __m128i b1 = _mm256_maskz_cvtepi16_epi8(0xFFFF, _mm256_add_epi16(c[1], bias));
        bytes[r / 8][r % 8] = _mm256_inserti128_si256(_mm256_castsi128_si256(b0), b1, 1);
      }
      transpose8(bytes[0], quads[0]);
      transpose8(bytes[1], quads[1]);
      auto* out = reinterpret_cast<__m256i*>(panel + gi * 8);
      for (int j = 0; j < 8; ++j) {
        _mm256_store_si256(out + 2 * j, quads[0][j]);
        _mm256_store_si256(out + 2 * j + 1, quads[1][j]);
      }
    }
  }
}

// The same panel for NibbleTable formats, 16 rows at a time without unpacking to words: four rows'
// 16 bytes per vector, each nibble looked up as a biased byte (one vpshufb per 64 values), and each
// quad of 16 rows gathered by two vpermt2d and a blend. quant_bench Matmul8x8 (one thread, Zen 4,
// where building dominates): MXFP4 4.05k -> 6.18k tok/s (Q4_1 4.97k -> 5.19k); 64 tokens 8.48k -> 9.85k.
template <class F>
  requires(Panel8<F> && NibbleTable<F>)
void build_panel8(const uint8_t* const* p, int64_t k, __m512i* panel, const Ahead& ahead) {
  const int64_t groups = k / kQK;
  auto* D = reinterpret_cast<__m256*>(panel + k / 4);
  __m256* M = D + groups * kHalves;
  alignas(16) static constexpr std::array<int8_t, 16> kBiased = [] {
    std::array<int8_t, 16> b{};
    for (int i = 0; i < 16; ++i) b[i] = static_cast<int8_t>(F::kNibbleWords[i] + F::kU8Bias);
    return b;
  }();
  const __m128i lut = _mm_load_si128(reinterpret_cast<const __m128i*>(kBiased.data()));
  const __m512i table = _mm512_maskz_broadcast_i32x4(0xFFFF, lut);
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (int64_t blk = 0; blk < groups; ++blk) {
    __m512i rows4[4], lo[4], hi[4];  // lane L of lo[i] / hi[i]: row 4i + L's values 0..15 / 16..31
    nibble_block16<F>(p, blk, D, M, ahead, rows4);
    for (int i = 0; i < 4; ++i) {
      lo[i] = _mm512_shuffle_epi8(table, _mm512_and_si512(rows4[i], nibble));
      hi[i] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(rows4[i], 4), nibble));
    }
    __m512i* out = panel + blk * (kQK / 4);
    for (int j = 0; j < 4; ++j) {
      // dword r of quad j: row r = 4i + L, found in [i] at dword 4L + j ([i] for even i from the
      // first operand, odd i the second); rows 0..7 from (0, 1), rows 8..15 from (2, 3)
      const __m512i idx = _mm512_add_epi32(_mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28),
                                           _mm512_set1_epi32(j));
      out[j] = _mm512_mask_blend_epi32(0xFF00, _mm512_permutex2var_epi32(lo[0], idx, lo[1]),
                                       _mm512_permutex2var_epi32(lo[2], idx, lo[3]));
      out[4 + j] = _mm512_mask_blend_epi32(0xFF00, _mm512_permutex2var_epi32(hi[0], idx, hi[1]),
                                           _mm512_permutex2var_epi32(hi[2], idx, hi[3]));
    }
  }
}

// The tokens' codes as bytes, 32 at a time (the panel tile broadcasts them four at a time).
inline void pack_codes8(const int16_t* q, int64_t k, int8_t* out) {
  for (int64_t e = 0; e < k; e += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + e), _mm512_maskz_cvtepi16_epi8(0xFFFFFFFFu, _mm512_loadu_si512(q + e)));
}
#endif

// P panels times T tokens: per pair of values, P weight loads and T broadcasts feed P * T
// multiply-adds, so the broadcasts are shared by P * kPanelRows rows. The int32 sums of a group stay
// in registers; the float accumulators are touched once per group.
// With Codes8, the panels are build_panel8's and x8[t] holds token t's codes as bytes.
template <class F, int P, int T, bool Codes8>
void panel_tile(const PanelVec::I* const* panel, int64_t k, const Act16Row* x, const int8_t* const* x8, float* const* y,
                const int* n) {
  using W = PanelVec;
  constexpr int R = kPanelRows;
  const int64_t groups = k / F::kGroup;
  const float* D[P];
  const float* M[P];
#pragma GCC unroll 2
  for (int i = 0; i < P; ++i) {
    D[i] = reinterpret_cast<const float*>(panel[i] + (Codes8 ? k / 4 : k / 2));
    M[i] = D[i] + R * groups;
  }
  typename W::V acc[P][T], accm[P][T];
#pragma GCC unroll 8
  for (int i = 0; i < P * T; ++i) acc[i / T][i % T] = accm[i / T][i % T] = W::fzero();
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t e = g * F::kGroup, b = e / kQK;
    typename W::I s[P * T];
#if TS_X86_WIDE && TS_X86_VNNI
    if constexpr (Codes8) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m512i start = _mm512_set1_epi32(-F::kU8Bias * x[t].sum[b]);
#pragma GCC unroll 2
        for (int i = 0; i < P; ++i) s[i * T + t] = start;
      }
      for (int j = 0; j < kQK / 4; ++j) {
        __m512i w[P];
#pragma GCC unroll 2
        for (int i = 0; i < P; ++i) w[i] = _mm512_load_si512(panel[i] + g * (kQK / 4) + j);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          int32_t quad;
          std::memcpy(&quad, x8[t] + e + 4 * j, 4);
          const __m512i xb = _mm512_set1_epi32(quad);
#pragma GCC unroll 2
          for (int i = 0; i < P; ++i) s[i * T + t] = _mm512_dpbusd_epi32(s[i * T + t], w[i], xb);
        }
      }
    } else
#endif
    {
#pragma GCC unroll 8
    for (int i = 0; i < P * T; ++i) s[i] = W::zero();
    for (int j = 0; j < F::kGroup / 2; ++j) {
      typename W::I w[P];
#pragma GCC unroll 2
      for (int i = 0; i < P; ++i) w[i] = W::load(panel[i] + e / 2 + j);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        int32_t pair;
        std::memcpy(&pair, x[t].q + e + 2 * j, 4);
        const typename W::I xb = W::broadcast(pair);
#pragma GCC unroll 2
        for (int i = 0; i < P; ++i) s[i * T + t] = W::madd(s[i * T + t], w[i], xb);
      }
    }
    }
#pragma GCC unroll 2
    for (int i = 0; i < P; ++i) {
      const typename W::V d = W::loadf(D[i] + R * g);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        if constexpr (kBiasedDecode<F> && !Codes8) s[i * T + t] = W::sub(s[i * T + t], W::broadcast(F::kBias * x[t].sum[b]));
        acc[i][t] = W::fmadd(W::cvt(s[i * T + t]), W::mul(d, W::set1(x[t].d[b])), acc[i][t]);
        if constexpr (F::kSign != MinSign::none) accm[i][t] = W::fmadd(W::loadf(M[i] + R * g), W::set1(x[t].s[b]), accm[i][t]);
      }
    }
  }
  for (int i = 0; i < P; ++i)
    for (int t = 0; t < T; ++t) {
      typename W::V v = acc[i][t];
      if constexpr (F::kSign == MinSign::add) v = W::add(v, accm[i][t]);
      else if constexpr (F::kSign == MinSign::sub) v = W::sub(v, accm[i][t]);
      W::store(y[t] + R * i, v, n[i]);
    }
}

// Tokens from which repacking rows into a panel pays for itself (measured with quant_bench).
inline constexpr int kPanelMinTokens = 6;  // rows8_tokens handles up to 5

// Panels built at once: rows x k int16 kept within L2 (with the activation tile), reused for every
// token tile of the call.
inline constexpr int64_t kPanelSetBytes = 192 * 1024;

// Codes8: the activation codes are within +-127 (quantize_act8), and the panels are 8-bit ones. The
// bytes are those of Codes8 = false on the same activations.
template <class F, bool Codes8 = false>
void matmul16(const uint8_t* W, size_t ws, int64_t rows, int64_t k, const uint8_t* X, size_t xs, int64_t n_tok, float* Y,
              size_t ys) {
  auto row_ptrs = [&](int64_t r0, int n, const uint8_t** p) {
    for (int r = 0; r < 8; ++r) p[r] = W + (r0 + std::min(r, n - 1)) * ws;
  };
  if (n_tok < kPanelMinTokens) {
    for (int64_t r0 = 0; r0 < rows; r0 += 8) {
      const int n = static_cast<int>(std::min<int64_t>(8, rows - r0));
      const uint8_t* p[8];
      row_ptrs(r0, n, p);
      Act16Row x[kPanelMinTokens];
      float* y[kPanelMinTokens];
      for (int64_t t = 0; t < n_tok; ++t) {
        x[t] = act16_row(X + t * xs, k);
        y[t] = Y + t * ys + r0;
      }
      const bool more = r0 + 8 < rows;
      const uint8_t* next = more ? W + (r0 + 8) * ws : nullptr;
      const Ahead ahead(next, more ? static_cast<size_t>(std::min<int64_t>(8, rows - r0 - 8)) * ws : 0, k / F::kElems);
      switch (n_tok) {
        case 1: rows8_tokens<F, 1>(p, k, x, y, n, ahead); break;
        case 2: rows8_tokens<F, 2>(p, k, x, y, n, ahead); break;
        case 3: rows8_tokens<F, 3>(p, k, x, y, n, ahead); break;
        case 4: rows8_tokens<F, 4>(p, k, x, y, n, ahead); break;
        default: rows8_tokens<F, 5>(p, k, x, y, n, ahead); break;
      }
    }
    return;
  }
  thread_local std::vector<uint8_t> panel_mem;  // reused from call to call
  thread_local std::vector<int8_t> codes8;
  constexpr int R = kPanelRows;
  size_t one = panel_bytes<F>(k);
#if TS_X86_WIDE && TS_X86_VNNI
  if constexpr (Codes8) {
    one = panel8_bytes<F>(k);
    codes8.resize(static_cast<size_t>(n_tok * k));
    for (int64_t t = 0; t < n_tok; ++t) pack_codes8(act16_row(X + t * xs, k).q, k, codes8.data() + t * k);
  }
#endif
  const int64_t per_set = std::max<int64_t>(1, kPanelSetBytes / static_cast<int64_t>(one));
  panel_mem.resize(one * static_cast<size_t>(std::min(per_set, (rows + R - 1) / R)) + 64);
  auto* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(panel_mem.data()) + 63) & ~uintptr_t{63});
  auto panel = [&](int64_t i) { return reinterpret_cast<PanelVec::I*>(base + i * one); };
  for (int64_t s0 = 0; s0 < rows; s0 += per_set * R) {
    const int64_t n_panels = std::min(per_set, (rows - s0 + R - 1) / R);
    for (int64_t i = 0; i < n_panels; ++i) {
      const uint8_t* p[kPanelRows];
      for (int h = 0; h < kHalves; ++h) {
        // A half past the last row repeats the half before it; its results are not stored.
        const int64_t r0 = std::min(s0 + R * i + 8 * h, (rows - 1) / 8 * 8);
        row_ptrs(r0, static_cast<int>(std::min<int64_t>(8, rows - r0)), p + 8 * h);
      }
      // Building reads each row a block at a time across the panel's rows: the rows that follow are
      // fetched meanwhile (Ahead). Zen 4, quant_bench Matmul8x16 (one thread): Q8_0 +15% on both the
      // avx2 and avx512-vnni tables, MXFP4 avx2 +16%; the synthesized 20b's pp64 +7-14%.
      auto ahead = [&](int64_t first, int64_t n) {
        const int64_t a = std::min(rows, first), b = std::min(rows, first + n);
        return Ahead(W + a * ws, static_cast<size_t>(b - a) * ws, k / F::kElems);
      };
#if TS_X86_WIDE && TS_X86_VNNI
      if constexpr (Codes8) {
        build_panel8<F>(p, k, panel(i), ahead(s0 + R * (i + 1), R));
        continue;
      }
#endif
#if TS_X86_WIDE
      if constexpr (NibbleTable<F>) {
        build_panel16<F>(p, k, panel(i), ahead(s0 + R * (i + 1), R));
        continue;
      }
#endif
      for (int h = 0; h < kHalves; ++h)
        build_panel<F>(p + 8 * h, k, reinterpret_cast<__m256i*>(panel(i)), h, ahead(s0 + R * i + 8 * (h + 1), 8));
    }
    // Panels go in pairs (the last one alone if their number is odd); tokens in tiles of 4.
    for (int64_t i = 0; i < n_panels; i += 2) {
      const bool two = i + 1 < n_panels;
      const PanelVec::I* pp[2] = {panel(i), panel(two ? i + 1 : i)};
      const int64_t r0 = s0 + R * i;
      const int n[2] = {static_cast<int>(std::min<int64_t>(R, rows - r0)),
                        two ? static_cast<int>(std::min<int64_t>(R, rows - r0 - R)) : 0};
      for (int64_t t = 0; t < n_tok;) {
        const int64_t left = n_tok - t;
        auto tile = [&](auto pc, auto tc) {
          constexpr int kP = decltype(pc)::value, kT = decltype(tc)::value;
          Act16Row x[kT];
          const int8_t* x8[kT];
          float* y[kT];
          for (int j = 0; j < kT; ++j) {
            x[j] = act16_row(X + (t + j) * xs, k);
            x8[j] = codes8.data() + (t + j) * k;
            y[j] = Y + (t + j) * ys + r0;
          }
          panel_tile<F, kP, kT, Codes8>(pp, k, x, x8, y, n);
          return kT;
        };
        using std::integral_constant;
        if (two) {
          if (left >= 4) t += tile(integral_constant<int, 2>{}, integral_constant<int, 4>{});
          else if (left == 3) t += tile(integral_constant<int, 2>{}, integral_constant<int, 3>{});
          else if (left == 2) t += tile(integral_constant<int, 2>{}, integral_constant<int, 2>{});
          else t += tile(integral_constant<int, 2>{}, integral_constant<int, 1>{});
        } else {
          if (left >= 4) t += tile(integral_constant<int, 1>{}, integral_constant<int, 4>{});
          else if (left == 3) t += tile(integral_constant<int, 1>{}, integral_constant<int, 3>{});
          else if (left == 2) t += tile(integral_constant<int, 1>{}, integral_constant<int, 2>{});
          else t += tile(integral_constant<int, 1>{}, integral_constant<int, 1>{});
        }
      }
    }
  }
}

}  // namespace k16
