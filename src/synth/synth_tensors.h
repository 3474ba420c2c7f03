// The tensor list of a synthesized model: names and shapes exactly as llama.cpp's loader for the
// architecture expects them, each with its type and the distribution its weights are drawn from.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quant/types.h"
#include "synth/synth_config.h"

namespace ts::synth {

struct TensorSpec {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the row length
  // Elements are mean + stddev * z, z roughly standard normal. Matrices use stddev 1/sqrt(row length)
  // so every projection keeps the variance of its input, which keeps a forward pass over many
  // layers numerically sane; norm weights sit near 1 and biases near 0.
  float mean, stddev;

  uint64_t n_elements() const;
};

// In file order. Throws ts::Error if a row length is not a multiple of its type's block size,
// naming the tensor and the option that sets that length.
std::vector<TensorSpec> plan_tensors(const SynthConfig& c);

}  // namespace ts::synth
