// Internal: the int16 activation row layout of kernels.h (int16 q[n], float d[n/32], float s[n/32],
// int32 sum[n/32])
// and the per-group view of weight blocks that defines the int16 products. Shared by the scalar
// table (the definition) and the vector tables (which must match it bit for bit).
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace ts::quant {

inline constexpr int32_t kAct16Max = 32767;  // |q| <= this: sums of products stay far inside int32
inline constexpr int32_t kAct8Max = 127;      // ActCodes::int8
inline int32_t max_code(ActCodes c) { return c == ActCodes::int8 ? kAct8Max : kAct16Max; }

struct Act16Row {
  const int16_t* q;
  const float* d;
  const float* s;
  const int32_t* sum;  // each block's sum of q, exact
};
inline Act16Row act16_row(const uint8_t* p, int64_t n) {
  const auto* d = reinterpret_cast<const float*>(p + 2 * n);
  return {reinterpret_cast<const int16_t*>(p), d, d + n / kQK, reinterpret_cast<const int32_t*>(d + 2 * (n / kQK))};
}

// The scalar definition of quantize_act16 (kernels.h) over n_blocks blocks; vector versions give the
// same bytes.
void quantize_act16_ref(const float* x, int64_t n_blocks, int32_t max_code, int16_t* q, float* d, float* s, int32_t* sum);

// How the offset of a format enters the result (see kernels.h): y = acc + accm, acc - accm or acc.
enum class MinSign { none, add, sub };

}  // namespace ts::quant
