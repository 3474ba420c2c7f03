// Internal to the CPU backend: the vectorised row kernels of the fast operations (ops_avx2.cpp;
// called only when the CPU has AVX2). Each works on one row, so the thread split never changes a
// result; the reference versions are in cpu_backend.cpp.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace ts::cpu {

// out[j] = act(g[j] + bg[j], u[j] + bu[j]) for j < n (n a multiple of 8; a null bias adds nothing).
void glu_avx2(Activation a, const float* g, const float* u, const float* bg, const float* bu, float* out, int64_t n);

// out = x / sqrt(mean(x^2) + eps) * w over each group of `group` values (a multiple of 8); the sum of
// squares in float lanes, added in a fixed order.
void rms_norm_avx2(const float* x, const float* w, float eps, int64_t n, int64_t group, float* out);

}  // namespace ts::cpu
