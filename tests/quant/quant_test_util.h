// Helpers shared by the quant tests: random weight blocks with bounded scales, Gaussian data, the
// kernel tables this machine can run, and an exact (float64) dot product of a float weight row, with
// the magnitude that rounding errors scale with.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "quant/kernel_table.h"
#include "quant/types.h"

namespace ts::quant::test {

// Every weight type with a dot kernel, and the ISAs this machine supports.
const std::vector<GgmlType>& dot_types();
std::vector<Isa> supported_isas();

std::vector<float> gaussian(size_t n, std::mt19937& rng, float sigma = 1.0f);
// n elements of type t: random bytes with every scale field replaced by a bounded finite value.
std::vector<uint8_t> random_weights(GgmlType t, int64_t n, std::mt19937& rng);

struct Exact {
  double value;      // the dot product, exactly (to float64) as the formats define it
  double magnitude;  // sum of |terms|: float rounding errors are bounded by a multiple of this
};
// Row w (k elements of the float type wt: F32, F16 or BF16) times the f32 activations x.
Exact exact_dot(GgmlType wt, const uint8_t* w, const float* x, int64_t k);

}  // namespace ts::quant::test
