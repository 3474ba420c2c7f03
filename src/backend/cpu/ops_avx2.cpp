// The fast row kernels (ops.h), for AVX2 + FMA.
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/ops.h"
#include "backend/cpu/simd_math_avx2.h"

namespace ts::cpu {
namespace {

inline __m256 load_or_zero(const float* p, int64_t j) { return p ? _mm256_loadu_ps(p + j) : _mm256_setzero_ps(); }

// x * sigmoid(k x) = x / (1 + e^(-k x))
inline __m256 silu(__m256 x, float k) {
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_mul_ps(x, _mm256_set1_ps(-k)))));
}

}  // namespace

void glu_avx2(Activation a, const float* g, const float* u, const float* bg, const float* bu, float* out, int64_t n) {
  for (int64_t j = 0; j < n; j += 8) {
    const __m256 x = _mm256_add_ps(_mm256_loadu_ps(g + j), load_or_zero(bg, j));
    const __m256 y = _mm256_add_ps(_mm256_loadu_ps(u + j), load_or_zero(bu, j));
    __m256 r = _mm256_setzero_ps();
    switch (a) {
      case Activation::SwiGLU: r = _mm256_mul_ps(silu(x, 1.0f), y); break;
      case Activation::GeluTanhGLU: {
        // 0.5 x (1 + tanh(z)) = x * sigmoid(2z), z = sqrt(2/pi) (x + 0.044715 x^3)
        const __m256 z = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f),
                                       _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x), _mm256_mul_ps(x, x), x));
        const __m256 sig = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                         _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_mul_ps(z, _mm256_set1_ps(-2.0f)))));
        r = _mm256_mul_ps(_mm256_mul_ps(x, sig), y);
        break;
      }
      case Activation::ClampedSwiGLU: {
        // gpt-oss: gate clamped above at 7, up to [-7, 7]; (u + 1) * g * sigmoid(1.702 g)
        const __m256 gc = _mm256_min_ps(x, _mm256_set1_ps(7.0f));
        const __m256 uc = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(-7.0f)), _mm256_set1_ps(7.0f));
        r = _mm256_mul_ps(silu(gc, 1.702f), _mm256_add_ps(uc, _mm256_set1_ps(1.0f)));
        break;
      }
    }
    _mm256_storeu_ps(out + j, r);
  }
}

void rms_norm_avx2(const float* x, const float* w, float eps, int64_t n, int64_t group, float* out) {
  for (int64_t g0 = 0; g0 < n; g0 += group) {
    const float* s = x + g0;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t j = 0;
    for (; j + 32 <= group; j += 32)
      for (int i = 0; i < 4; ++i) {
        const __m256 v = _mm256_loadu_ps(s + j + 8 * i);
        acc[i] = _mm256_fmadd_ps(v, v, acc[i]);
      }
    for (; j < group; j += 8) {
      const __m256 v = _mm256_loadu_ps(s + j);
      acc[0] = _mm256_fmadd_ps(v, v, acc[0]);
    }
    const float ss = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    const __m256 inv = _mm256_set1_ps(1.0f / std::sqrt(ss / static_cast<float>(group) + eps));
    for (j = 0; j < group; j += 8)
      _mm256_storeu_ps(out + g0 + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(s + j), inv), _mm256_loadu_ps(w + j)));
  }
}

}  // namespace ts::cpu
