// Rotary position tables, computed in double precision for the positions of one forward call.
#pragma once
#include "backend/backend.h"
#include "model/hparams.h"

namespace ts {

// cos/sin for positions pos0 .. pos0 + n - 1. With YaRN (hparams.yarn_factor > 0) the frequencies
// between the beta_fast and beta_slow correction dimensions blend interpolated and original
// rotation, and cos/sin are scaled by 0.1 * ln(factor) + 1 (about 1.3466 for factor 32).
RopeTable make_rope_table(const HParams& h, RopeTable::Layout layout, double base, int64_t pos0, int64_t n);

}  // namespace ts
