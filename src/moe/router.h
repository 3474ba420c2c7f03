// Router contracts: from a token's router logits to its experts, in ranking order, with weights.
// The ranking order is part of the contract: experts are always reduced in it, so output bytes can
// never depend on where an expert lives or in which order experts were computed.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"  // RouterContract

namespace ts {

struct Routing {
  int64_t n_tok = 0, k = 0;
  std::vector<int32_t> experts;  // [n_tok][k], best first; ties go to the lower expert index
  std::vector<float> weights;    // [n_tok][k]
};

// logits: [n_tok][n_expert] f32; bias: n_expert values or nullptr. NaN logits are an error naming
// the layer (a NaN would otherwise select arbitrary experts).
void route(RouterContract c, const float* logits, const float* bias, int64_t n_tok, int64_t n_expert,
           int64_t k, int64_t layer, Routing& out);

}  // namespace ts
