// The gated activations of the CUDA backend, for its kernels and for the host threads that compute
// some routed experts in the device's place (host_experts.h): both must give the same bits, so e^x
// is computed from IEEE single-precision operations only (the device's expf uses its approximate
// exponential unit, which a host cannot reproduce), and every fused multiply-add is written as one.
// exp_ieee is within 1 ulp of e^x wherever the result is a normal float (checked over every 97th
// float of that range); the values' NaN handling is CpuBackend::glu's.
#pragma once
#include <cmath>

#include "backend/backend.h"
#include "backend/cuda/weight_layout.h"

namespace ts::gpu {

// e^x: x = n ln2 + r (ln2 in two parts, Cody-Waite), e^r by Cephes' expf polynomial, then 2^n in two
// exact scalings so results down to the subnormals need no special case.
TS_HD float exp_ieee(float x) {
  if (x != x) return x;
  if (x > 88.7228317f) return INFINITY;
  if (x < -103.972084f) return 0.0f;
  const float n = rintf(x * 1.44269504f);
  float r = fmaf(n, -0.693359375f, x);
  r = fmaf(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  const float y = fmaf(p, r * r, r) + 1.0f;
  const int k = static_cast<int>(n), k1 = k / 2, k2 = k - k1;  // each in [-75, 65]
  return y * bits_to_float(static_cast<uint32_t>(k1 + 127) << 23) * bits_to_float(static_cast<uint32_t>(k2 + 127) << 23);
}

// Whether glu_value gives the same bits on a host thread (GeluTanhGLU's tanhf does not).
TS_HD bool glu_on_host(Activation a) { return a == Activation::SwiGLU || a == Activation::ClampedSwiGLU; }

TS_HD float glu_value(Activation a, float g, float u) {
  switch (a) {
    case Activation::SwiGLU: return g / (1.0f + exp_ieee(-g)) * u;
    case Activation::GeluTanhGLU: return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * u;
    case Activation::ClampedSwiGLU: {
      // gpt-oss: the gate clamped above at 7, the linear part to [-7, 7] plus one.
      const float x = 7.0f < g ? 7.0f : g;
      const float y = u < -7.0f ? -7.0f : (7.0f < u ? 7.0f : u);
      return x / (1.0f + exp_ieee(-1.702f * x)) * (y + 1.0f);
    }
  }
  return 0.0f;
}

}  // namespace ts::gpu
