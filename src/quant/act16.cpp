// int16 activation quantization (kernels.h). One scalar implementation for every kernel table, so
// all ISAs see the same codes: d = amax / 32767, q = round-to-nearest-even(x * (32767 / amax)).
#include <cmath>
#include <cstring>

#include "quant/act16.h"
#include "quant/kernel_table.h"
#include "quant/kernels.h"
#include "util/error.h"

namespace ts::quant {

size_t act16_bytes(int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * 2 + static_cast<size_t>(n / kQK) * 8;
  return (bytes + 63) / 64 * 64;  // rows stay 64-byte aligned in a buffer of several rows
}

void quantize_act16(const float* x, void* dst, int64_t n) {
  if (n % kQK != 0) fail("activation length {} is not a multiple of 32", n);
  const Act16Fn f = active_kernels().quantize16;
  (f ? f : quantize_act16_ref)(x, static_cast<uint8_t*>(dst), n);
}

void quantize_act16_ref(const float* x, uint8_t* dst, int64_t n) {
  auto* q = reinterpret_cast<int16_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + 2 * n);
  float* s = d + n / kQK;
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, q += kQK) {
    float amax = 0;
    bool finite = true;
    for (int j = 0; j < kQK; ++j) {
      amax = std::fmax(amax, std::fabs(x[j]));
      finite = finite && std::isfinite(x[j]);
    }
    if (!finite) {  // propagate: the products of this block become NaN, and the caller sees it
      std::memset(q, 0, kQK * sizeof(int16_t));
      d[b] = s[b] = NAN;
      continue;
    }
    const float id = amax != 0 ? static_cast<float>(kAct16Max) / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < kQK; ++j) {
      q[j] = static_cast<int16_t>(std::nearbyint(x[j] * id));
      sum += q[j];
    }
    d[b] = amax / static_cast<float>(kAct16Max);
    s[b] = d[b] * static_cast<float>(sum);
  }
}

}  // namespace ts::quant
