// K-format weight quantization: a plain scale search per sub-block, then 6/8-bit quantization of the
// sub-block scales against the super-block's fp16 scale, then the values are re-rounded with the
// scales as they will actually be decoded (so the stored codes are the best for the stored scales).
// It is not ggml's search bit for bit; the tests bound its round-trip error instead.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/quantize_k.h"

namespace ts::quant {
namespace {

struct Fit {
  float scale = 0, min = 0;  // value ~ scale * q - min
};

// Q4_K/Q5_K sub-block: x ~ s * q - m with q in [0, nmax], s >= 0, m >= 0 (the format subtracts a
// non-negative min, so the grid must cover 0). Tries a ladder of grid spacings around the one that
// spans [min(x,0), max(x)], refits s and m by least squares for each, keeps the smallest error.
Fit fit_affine(const float* x, int n, int nmax) {
  float lo = 0, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (hi <= lo) return {0, -lo};
  Fit best{(hi - lo) / nmax, -lo};
  float best_err = INFINITY;
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (nmax + 0.1f * step) / (hi - lo);
    double sq = 0, s1 = 0, sqx = 0, sx = 0;
    int q[kQKK];
    for (int i = 0; i < n; ++i) {
      q[i] = std::clamp(static_cast<int>(std::lround((x[i] - lo) * iscale)), 0, nmax);
      sq += double(q[i]) * q[i];
      s1 += q[i];
      sqx += double(q[i]) * x[i];
      sx += x[i];
    }
    // least squares for x ~ s*q + b, then b = -m must be <= 0
    const double det = n * sq - s1 * s1;
    double s = det > 0 ? (n * sqx - s1 * sx) / det : 0, b = det > 0 ? (sx - s * s1) / n : sx / n;
    if (b > 0) {
      b = 0;
      s = sq > 0 ? sqx / sq : 0;
    }
    if (s < 0) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) err += (s * q[i] + b - x[i]) * (s * q[i] + b - x[i]);
    if (err < best_err) {
      best_err = static_cast<float>(err);
      best = {static_cast<float>(s), static_cast<float>(-b)};
    }
  }
  return best;
}

// Q6_K sub-block: x ~ s * q with q in [-32, 31], s signed so the largest magnitude can use -32.
float fit_symmetric(const float* x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax == 0) return 0;
  float best = -max / 32, best_err = INFINITY;
  for (int step = -9; step <= 9; ++step) {
    const float iscale = -(32 + 0.1f * step) / max;
    double sqx = 0, sq = 0;
    for (int i = 0; i < n; ++i) {
      const int q = std::clamp(static_cast<int>(std::lround(iscale * x[i])), -32, 31);
      sqx += double(q) * x[i];
      sq += double(q) * q;
    }
    if (sq == 0) continue;
    const double s = sqx / sq;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const int q = std::clamp(static_cast<int>(std::lround(x[i] / s)), -32, 31);
      err += (s * q - x[i]) * (s * q - x[i]);
    }
    if (err < best_err) {
      best_err = static_cast<float>(err);
      best = static_cast<float>(s);
    }
  }
  return best;
}

// Stores v/63 of the largest v as fp16 and returns the decoded super-scale; codes[j] = round(v[j]/it).
float quantize_scales6(const float* v, uint8_t* codes, uint8_t* fp16_dst) {
  const float vmax = *std::max_element(v, v + 8);
  store_f16(fp16_dst, vmax / 63);
  const float d = load_f16(fp16_dst);
  for (int j = 0; j < 8; ++j) codes[j] = d > 0 ? static_cast<uint8_t>(std::clamp<long>(std::lround(v[j] / d), 0, 63)) : 0;
  return d;
}

int round_code(float x, float scale, int lo, int hi) {
  return scale != 0 ? std::clamp(static_cast<int>(std::lround(x / scale)), lo, hi) : 0;
}

// Q4_K and Q5_K share everything but the value width and where the fifth bit goes.
template <int Bits>
void quantize_affine_k(const float* x, uint8_t* b) {
  constexpr int kNmax = (1 << Bits) - 1;
  constexpr int kScales = layout::q4_k_scales;  // same offsets in Q4_K and Q5_K
  constexpr int kQs = Bits == 4 ? layout::q4_k_qs : layout::q5_k_qs;
  float scale[8], min[8];
  for (int j = 0; j < 8; ++j) {
    const Fit f = fit_affine(x + 32 * j, 32, kNmax);
    scale[j] = f.scale;
    min[j] = f.min;
  }
  uint8_t sc[8], mn[8];
  const float d = quantize_scales6(scale, sc, b);
  const float dmin = quantize_scales6(min, mn, b + layout::q4_k_dmin);
  uint8_t* s = b + kScales;
  std::memset(s, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] |= sc[j];
      s[j + 4] |= mn[j];
    } else {
      s[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((mn[j] & 0xF) << 4));
      s[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      s[j] |= static_cast<uint8_t>((mn[j] >> 4) << 6);
    }
  }
  uint8_t q[kQKK];
  for (int i = 0; i < kQKK; ++i) {
    const float ds = d * sc[i / 32], m = dmin * mn[i / 32];
    q[i] = static_cast<uint8_t>(round_code(x[i] + m, ds, 0, kNmax));
  }
  uint8_t* qs = b + kQs;
  if constexpr (Bits == 5) std::memset(b + layout::q5_k_qh, 0, 32);
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo = q[64 * j + l], hi = q[64 * j + 32 + l];
      qs[32 * j + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      if constexpr (Bits == 5)
        b[layout::q5_k_qh + l] |= static_cast<uint8_t>(((lo >> 4) << (2 * j)) | ((hi >> 4) << (2 * j + 1)));
    }
}

}  // namespace

void quantize_q4_k_block(const float* x, uint8_t* b) { quantize_affine_k<4>(x, b); }
void quantize_q5_k_block(const float* x, uint8_t* b) { quantize_affine_k<5>(x, b); }

void quantize_q6_k_block(const float* x, uint8_t* b) {
  float scale[16];
  float smax = 0, amax = 0;
  for (int g = 0; g < 16; ++g) {
    scale[g] = fit_symmetric(x + 16 * g, 16);
    if (std::fabs(scale[g]) > amax) {
      amax = std::fabs(scale[g]);
      smax = scale[g];
    }
  }
  std::memset(b, 0, layout::q6_k_bytes);
  if (amax == 0) return;
  // int8 sub-scales: the largest maps to -128 (as in ggml), so d = -smax / 128.
  store_f16(b + layout::q6_k_d, -smax / 128);
  const float d = load_f16(b + layout::q6_k_d);
  int8_t sc[16];
  for (int g = 0; g < 16; ++g) sc[g] = static_cast<int8_t>(d != 0 ? std::clamp<long>(std::lround(scale[g] / d), -128, 127) : 0);
  std::memcpy(b + layout::q6_k_scales, sc, 16);
  uint8_t q[kQKK];
  for (int i = 0; i < kQKK; ++i) q[i] = static_cast<uint8_t>(round_code(x[i], d * sc[i / 16], -32, 31) + 32);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* v = q + 128 * h + l;  // v[0], v[32], v[64], v[96]: the four values sharing qh[l]
      b[64 * h + l] = static_cast<uint8_t>((v[0] & 0xF) | ((v[64] & 0xF) << 4));
      b[64 * h + 32 + l] = static_cast<uint8_t>((v[32] & 0xF) | ((v[96] & 0xF) << 4));
      b[layout::q6_k_qh + 32 * h + l] =
          static_cast<uint8_t>((v[0] >> 4) | ((v[32] >> 4) << 2) | ((v[64] >> 4) << 4) | ((v[96] >> 4) << 6));
    }
}

}  // namespace ts::quant
