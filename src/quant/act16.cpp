// int16 activation quantization (kernels.h). One scalar implementation for every kernel table, so
// all ISAs see the same codes: d = amax / max, q = round-to-nearest-even(x * (max / amax)), max 32767
// (or 127 for 8-bit codes).
#include <cmath>
#include <cstring>

#include "quant/act16.h"
#include "quant/kernel_table.h"
#include "quant/kernels.h"
#include "util/error.h"

namespace ts::quant {

size_t act16_bytes(int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * 2 + static_cast<size_t>(n / kQK) * 12;
  return (bytes + 63) / 64 * 64;  // rows stay 64-byte aligned in a buffer of several rows
}

void quantize_act16(const float* x, void* dst, int64_t n, ActCodes codes) {
  if (n % kQK != 0) fail("activation length {} is not a multiple of 32", n);
  auto* p = static_cast<uint8_t*>(dst);
  auto* d = reinterpret_cast<float*>(p + 2 * n);
  const Act16Fn f = active_kernels().quantize16;
  (f ? f : quantize_act16_ref)(x, n / kQK, max_code(codes), reinterpret_cast<int16_t*>(p), d, d + n / kQK,
                               reinterpret_cast<int32_t*>(d + 2 * (n / kQK)));
}

void quantize_act16_block(const float* x32, void* row, int64_t n, int64_t b, ActCodes codes) {
  auto* p = static_cast<uint8_t*>(row);
  auto* d = reinterpret_cast<float*>(p + 2 * n);
  const Act16Fn f = active_kernels().quantize16;
  (f ? f : quantize_act16_ref)(x32, 1, max_code(codes), reinterpret_cast<int16_t*>(p) + b * kQK, d + b, d + n / kQK + b,
                               reinterpret_cast<int32_t*>(d + 2 * (n / kQK)) + b);
}

void quantize_act16_ref(const float* x, int64_t n_blocks, int32_t max_code, int16_t* q, float* d, float* s, int32_t* sum) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK, q += kQK) {
    float amax = 0;
    bool finite = true;
    for (int j = 0; j < kQK; ++j) {
      amax = std::fmax(amax, std::fabs(x[j]));
      finite = finite && std::isfinite(x[j]);
    }
    if (!finite) {  // propagate: the products of this block become NaN, and the caller sees it
      std::memset(q, 0, kQK * sizeof(int16_t));
      d[b] = s[b] = NAN;
      sum[b] = 0;
      continue;
    }
    const float id = amax != 0 ? static_cast<float>(max_code) / amax : 0.0f;
    int32_t qs = 0;
    for (int j = 0; j < kQK; ++j) {
      q[j] = static_cast<int16_t>(std::nearbyint(x[j] * id));
      qs += q[j];
    }
    d[b] = amax / static_cast<float>(max_code);
    s[b] = d[b] * static_cast<float>(qs);
    sum[b] = qs;
  }
}

}  // namespace ts::quant
