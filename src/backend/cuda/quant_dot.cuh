// Dot products of repacked weight rows (weight_layout.h) with activations, for the matvec kernels.
// A lane takes one 16-byte "unit" of a row's lo plane at a time (32 values of the 4-bit formats, 16
// of Q8_0, 8 of F16/BF16, 4 of F32) plus its few hi/aux bytes.
//
// The quantized formats multiply bytes with dp4a: the activations are staged as a 16-bit integer
// per value and a scale per 32 values (QView), split into two signed bytes so that two dp4a give
// the exact integer dot of a word; a unit's scales are applied once, in f32. About 2.3 instructions
// per weight value for MXFP4 and 1 to 1.5 for the others, against 4 to 5 for f32 products. The
// 16-bit activations cost ~2e-5 relative (llama.cpp rounds them to 8 bits).
//
// F32, F16 and BF16 rows multiply exact f32 activations (XView).
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include "backend/cuda/weight_layout.h"

namespace ts::gpu {

// Activations staged in shared memory: float4 slot c of a chunk lives at swz(c), which spreads the
// 128-byte strided reads of a warp over all banks.
__device__ __forceinline__ int swz(int c) { return c ^ ((c >> 3) & 7); }

// A staged chunk of f32 activations, swizzled.
struct XView {
  const float4* x;
};

// The activations of a chunk for the int8 products: per 32 values a scale d and integers
// q = 256 h + l (|q| <= 32639, h and l signed bytes). A unit's bytes are stored in the order its
// weight bytes come out of the format's decoding (Fmt::qval) as parts of 16 bytes: its V/16 parts
// of h, then its V/16 parts of l, part p of unit u at q[p * stride + u] (a warp's lanes read 512
// contiguous bytes).
struct QView {
  const uint4* q;
  const float* d;   // one per 32 values
  const int2* qs;   // per 32 values: the sums of q over values 0..15 and 16..31 (Fmt::kSums)
  int stride;       // units per part plane
};
// The int8 formats: those with a byte order for the staged activations.
template <class F>
concept Int8Dot = requires { F::qval(0); };

// MXFP4's values doubled (0, +-1, +-2, +-3, +-4, +-6, +-8, +-12) as signed bytes, codes 0..7 from
// T01, 8..15 from T23: t0 = the values of nibbles 0..3 of w (byte k: nibble k), t1 = nibbles 4..7.
__device__ __forceinline__ void mxfp4_bytes(uint32_t w, uint32_t& t0, uint32_t& t1) {
  constexpr uint32_t T0 = 0x03020100u, T1 = 0x0C080604u, T2 = 0xFDFEFF00u, T3 = 0xF4F8FAFCu;
  const uint32_t sel = w & 0x77777777u, pick = 0x32103210u | ((w & 0x88888888u) >> 1);
  t0 = __byte_perm(__byte_perm(T0, T1, sel), __byte_perm(T2, T3, sel), pick);
  t1 = __byte_perm(__byte_perm(T0, T1, sel >> 16), __byte_perm(T2, T3, sel >> 16), pick >> 16);
}

// Per format: `Unit` holds what one lane loads for one unit, `load` fetches it (16-byte load for
// the bulk) and `dot` adds its products with NT tokens' activations to acc[t]. kFlat: the products'
// step loads and multiplies both units of both rows unconditionally (matvec.cu says when that pays).
template <GgmlType T>
struct Fmt;

// Adds word w's dot with a token's staged h and l words to sh and sl (sum w q = 256 sh + sl).
__device__ __forceinline__ void dot4q(uint32_t w, uint32_t h, uint32_t l, int& sh, int& sl) {
  sh = __dp4a(static_cast<int>(w), static_cast<int>(h), sh);
  sl = __dp4a(static_cast<int>(w), static_cast<int>(l), sl);
}
// The same for 16 bytes of weights (w0..w3) and one staged part of h and of l.
__device__ __forceinline__ void dot16q(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, uint4 h, uint4 l, int& sh, int& sl) {
  dot4q(w0, h.x, l.x, sh, sl);
  dot4q(w1, h.y, l.y, sh, sl);
  dot4q(w2, h.z, l.z, sh, sl);
  dot4q(w3, h.w, l.w, sh, sl);
}

// The 4-bit families: word a of a unit holds values 4a..4a+3 (low nibbles) and 16+4a..16+4a+3
// (high nibbles); Q5 and Q6 add their extra bits (weight_layout.h: value i's Q5 bit at
// 8(i%4) + i/4 of the hi word; Q6 bits at 8(j%4) + 2(j/4) of word i/16). Each value is
// d (n - off) + m with n unsigned, so a unit's sum is d_x (d (sum n q - off Q) + m Q), with Q the
// sum of q staged per half block (per half because Q6_K has a scale per 16 values); the integer
// sums stay below 2^26 and convert with one rounding.
enum class Extra { None, Bit5, Bits6 };
struct Unit4 {
  uint4 q;
  uint32_t h0 = 0, h1 = 0;
  float d = 0, m = 0;  // scale and additive term per format
  float d2 = 0;        // Q6_K: the second half's scale
};

template <GgmlType T, Extra E, int Off>
struct Fmt4 {
  static constexpr int kValues = 32;
  static constexpr bool kFlat = false;
  static constexpr bool kSums = true;
  static constexpr int qval(int b) { return b; }
  __device__ static Unit4 load(const uint8_t* row, const RowLayout& L, int64_t g) {
    Unit4 u;
    u.q = __ldg(reinterpret_cast<const uint4*>(row) + g);
    const uint8_t* hi = row + L.lo;
    const uint8_t* aux = hi + L.hi;
    if constexpr (E == Extra::Bit5) u.h0 = __ldg(reinterpret_cast<const uint32_t*>(hi) + g);
    if constexpr (E == Extra::Bits6) {
      const uint2 h = __ldg(reinterpret_cast<const uint2*>(hi) + g);
      u.h0 = h.x;
      u.h1 = h.y;
    }
    if constexpr (T == GgmlType::Q4_0 || T == GgmlType::Q5_0) {
      u.d = __half2float(__ldg(reinterpret_cast<const __half*>(aux) + g));
    } else if constexpr (T == GgmlType::Q4_1 || T == GgmlType::Q5_1) {
      const __half2 dm = __ldg(reinterpret_cast<const __half2*>(aux) + g);
      u.d = __low2float(dm);
      u.m = __high2float(dm);
    } else if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
      const uint8_t* a = aux + (g / 8) * 16;
      int sc, mn;
      k_scale_min(a + 4, static_cast<int>(g % 8), sc, mn);
      const __half2 dm = __ldg(reinterpret_cast<const __half2*>(a));
      u.d = __low2float(dm) * static_cast<float>(sc);
      u.m = -(__high2float(dm) * static_cast<float>(mn));
    } else if constexpr (T == GgmlType::Q6_K) {
      const uint8_t* a = aux + (g / 8) * 20;
      const float d = __half2float(__ldg(reinterpret_cast<const __half*>(a)));
      const int j = 4 + 2 * static_cast<int>(g % 8);
      u.d = d * static_cast<float>(static_cast<int8_t>(__ldg(a + j)));
      u.d2 = d * static_cast<float>(static_cast<int8_t>(__ldg(a + j + 1)));
    }
    return u;
  }
  template <int NT>
  __device__ static void dot(const Unit4& u, const QView (&qv)[NT], int ul, float (&acc)[NT]) {
    const uint32_t w[4] = {u.q.x, u.q.y, u.q.z, u.q.w};
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      lo[a] = w[a] & 0x0F0F0F0Fu;
      hi[a] = (w[a] >> 4) & 0x0F0F0F0Fu;
      if constexpr (E == Extra::Bit5) {
        lo[a] |= (u.h0 << (4 - a)) & 0x10101010u;
        hi[a] |= (u.h0 >> a) & 0x10101010u;
      } else if constexpr (E == Extra::Bits6) {
        lo[a] |= (a < 3 ? (u.h0 << (4 - 2 * a)) : (u.h0 >> 2)) & 0x30303030u;
        hi[a] |= (a < 3 ? (u.h1 << (4 - 2 * a)) : (u.h1 >> 2)) & 0x30303030u;
      }
    }
#pragma unroll
    for (int k = 0; k < NT; ++k) {
      const uint4* q = qv[k].q + ul;
      const int S = qv[k].stride;
      const uint4 h0 = q[0], h1 = q[S], l0 = q[2 * S], l1 = q[3 * S];
      int ah = 0, al = 0, bh = 0, bl = 0;  // values 0..15 (a) and 16..31 (b)
      dot16q(lo[0], lo[1], lo[2], lo[3], h0, l0, ah, al);
      dot16q(hi[0], hi[1], hi[2], hi[3], h1, l1, bh, bl);
      const int2 qs = qv[k].qs[ul];
      const float dx = qv[k].d[ul];
      if constexpr (T == GgmlType::Q6_K) {
        acc[k] = fmaf(dx, u.d * static_cast<float>(256 * ah + al - Off * qs.x) + u.d2 * static_cast<float>(256 * bh + bl - Off * qs.y), acc[k]);
      } else {
        const int Q = qs.x + qs.y;
        acc[k] = fmaf(dx, u.d * static_cast<float>(256 * (ah + bh) + al + bl - Off * Q) + u.m * static_cast<float>(Q), acc[k]);
      }
    }
  }
};

template <> struct Fmt<GgmlType::Q4_0> : Fmt4<GgmlType::Q4_0, Extra::None, 8> {};
template <> struct Fmt<GgmlType::Q4_1> : Fmt4<GgmlType::Q4_1, Extra::None, 0> {};
template <> struct Fmt<GgmlType::Q5_0> : Fmt4<GgmlType::Q5_0, Extra::Bit5, 16> {};
template <> struct Fmt<GgmlType::Q5_1> : Fmt4<GgmlType::Q5_1, Extra::Bit5, 0> {};
template <> struct Fmt<GgmlType::Q4_K> : Fmt4<GgmlType::Q4_K, Extra::None, 0> {};
template <> struct Fmt<GgmlType::Q5_K> : Fmt4<GgmlType::Q5_K, Extra::Bit5, 0> {};
template <> struct Fmt<GgmlType::Q6_K> : Fmt4<GgmlType::Q6_K, Extra::Bits6, 32> {};

// MXFP4: a unit is one block (16 bytes of nibbles, value i low and i + 16 high in byte i % 16) and
// its E8M0 scale. |sum w q| <= 32 * 12 * 32639 < 2^24, so the per-block sum converts exactly.
template <>
struct Fmt<GgmlType::MXFP4> {
  static constexpr int kValues = 32;
  static constexpr bool kFlat = false;
  static constexpr bool kSums = false;
  // Byte b of the unit's decoded weights (mxfp4_bytes of word b / 8) holds value qval(b).
  static constexpr int qval(int b) { return 4 * (b / 8) + (b % 8) / 2 + 16 * (b % 2); }
  struct Unit {
    uint4 q;
    float d;  // 2^(e - 128): the values are doubled
  };
  __device__ static Unit load(const uint8_t* row, const RowLayout& L, int64_t g) {
    return Unit{__ldg(reinterpret_cast<const uint4*>(row) + g), e8m0_half(__ldg(row + L.lo + g))};
  }
  template <int NT>
  __device__ static void dot(const Unit& u, const QView (&qv)[NT], int ul, float (&acc)[NT]) {
    uint32_t t[8];
    mxfp4_bytes(u.q.x, t[0], t[1]);
    mxfp4_bytes(u.q.y, t[2], t[3]);
    mxfp4_bytes(u.q.z, t[4], t[5]);
    mxfp4_bytes(u.q.w, t[6], t[7]);
#pragma unroll
    for (int k = 0; k < NT; ++k) {
      const uint4* q = qv[k].q + ul;
      const int S = qv[k].stride;
      const uint4 h0 = q[0], h1 = q[S], l0 = q[2 * S], l1 = q[3 * S];
      int sh = 0, sl = 0;
      dot16q(t[0], t[1], t[2], t[3], h0, l0, sh, sl);
      dot16q(t[4], t[5], t[6], t[7], h1, l1, sh, sl);
      acc[k] = fmaf(static_cast<float>(256 * sh + sl), u.d * qv[k].d[ul], acc[k]);
    }
  }
};

// Q8_0: a unit is half a block, 16 signed bytes, and the block's scale. The sum of a unit
// (|.| <= 16 * 128 * 32639 < 2^26) converts with one rounding.
template <>
struct Fmt<GgmlType::Q8_0> {
  static constexpr int kValues = 16;
  static constexpr bool kFlat = true;
  static constexpr bool kSums = false;
  static constexpr int qval(int b) { return b; }
  struct Unit {
    uint4 q;
    float d;
  };
  __device__ static Unit load(const uint8_t* row, const RowLayout& L, int64_t u) {
    return Unit{__ldg(reinterpret_cast<const uint4*>(row) + u),
                __half2float(__ldg(reinterpret_cast<const __half*>(row + L.lo + L.hi) + u / 2))};
  }
  template <int NT>
  __device__ static void dot(const Unit& u, const QView (&qv)[NT], int ul, float (&acc)[NT]) {
#pragma unroll
    for (int k = 0; k < NT; ++k) {
      const uint4 h = qv[k].q[ul], l = qv[k].q[qv[k].stride + ul];
      int sh = 0, sl = 0;
      dot16q(u.q.x, u.q.y, u.q.z, u.q.w, h, l, sh, sl);
      acc[k] = fmaf(static_cast<float>(256 * sh + sl), u.d * qv[k].d[ul / 2], acc[k]);
    }
  }
};

// Plain floats: a unit is 16 bytes of F32 (4 values), F16 or BF16 (8 values).
template <>
struct Fmt<GgmlType::F32> {
  static constexpr int kValues = 4;
  static constexpr bool kFlat = false;
  using Unit = float4;
  __device__ static Unit load(const uint8_t* row, const RowLayout&, int64_t u) { return __ldg(reinterpret_cast<const float4*>(row) + u); }
  template <int NT>
  __device__ static void dot(const Unit& w, const XView (&xv)[NT], int ul, float (&acc)[NT]) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const float4 x = xv[t].x[swz(ul)];
      acc[t] = fmaf(w.x, x.x, fmaf(w.y, x.y, fmaf(w.z, x.z, fmaf(w.w, x.w, acc[t]))));
    }
  }
};

template <GgmlType T>
struct FmtHalf {
  static constexpr int kValues = 8;
  static constexpr bool kFlat = false;
  using Unit = uint4;
  __device__ static Unit load(const uint8_t* row, const RowLayout&, int64_t u) { return __ldg(reinterpret_cast<const uint4*>(row) + u); }
  __device__ static float2 pair(uint32_t v) {
    if constexpr (T == GgmlType::F16) return __half22float2(*reinterpret_cast<const __half2*>(&v));
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xFFFF0000u));
  }
  template <int NT>
  __device__ static void dot(const Unit& w, const XView (&xv)[NT], int ul, float (&acc)[NT]) {
    const float2 a = pair(w.x), b = pair(w.y), c = pair(w.z), d = pair(w.w);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const float4 x0 = xv[t].x[swz(2 * ul)], x1 = xv[t].x[swz(2 * ul + 1)];
      float s = acc[t];
      s = fmaf(a.x, x0.x, s);
      s = fmaf(a.y, x0.y, s);
      s = fmaf(b.x, x0.z, s);
      s = fmaf(b.y, x0.w, s);
      s = fmaf(c.x, x1.x, s);
      s = fmaf(c.y, x1.y, s);
      s = fmaf(d.x, x1.z, s);
      acc[t] = fmaf(d.y, x1.w, s);
    }
  }
};
template <> struct Fmt<GgmlType::F16> : FmtHalf<GgmlType::F16> {};
template <> struct Fmt<GgmlType::BF16> : FmtHalf<GgmlType::BF16> {};

}  // namespace ts::gpu
