// Rotary tables for the CPU backend: cos and sin per (row, frequency pair), computed in double
// precision from the step's positions and rounded to float once.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace ts {

struct RopeTable {
  RopeParams params;
  std::vector<float> cos, sin;  // [n_rows][n_rot / 2]
};

// Fills t.cos / t.sin for the given positions (one per row) under t.params.
void compute_rope_table(const std::vector<int64_t>& positions, RopeTable& t);

}  // namespace ts
