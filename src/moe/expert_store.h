// Where routed experts come from. The forward pass asks for one expert of one layer at a time and
// never assumes experts are adjacent in memory: this is the seam where the residency modes
// (mapped, streamed into a bounded slot cache) plug in without touching the forward pass.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace ts {

class GgufFile;

using ExpertView = ExpertWeights;

class ExpertStore {
 public:
  virtual ~ExpertStore() = default;
  virtual ExpertView get(int64_t layer, int64_t expert) = 0;
  // Whether every expert stays at the address get() gives for the store's lifetime (then a backend
  // may run the whole layer itself: Backend::routed_experts). Stores that move experts say no.
  virtual bool resident() const { return false; }
};

// All experts in place in the mapped GGUF: expert e of a [n_expert][rows][cols] tensor is the
// contiguous slice at e * rows * row_stride.
std::unique_ptr<ExpertStore> make_resident_experts(const GgufFile& g, Backend& be, int64_t n_layer,
                                                   int64_t n_expert, int64_t n_embd, int64_t n_ff,
                                                   bool with_bias);

}  // namespace ts
