// Replays the slot planner over a router trace (--router-hist --router-trace): the hit rate a
// streamed cache of a given size and policy would have had, per layer, without running the model.
// It schedules exactly as the streamed store does for one token at a time (hits first, then misses
// in router order, in waves when the cache is smaller than the token's experts), so its hit rate is
// the store's for the same routing. Used by `turbospark router-replay` and scripts/plot_router.py.
#pragma once
#include <cstdint>
#include <vector>

#include "residency/slot_planner.h"

namespace ts {

struct ReplayResult {
  int64_t requests = 0, hits = 0;
  double hit_rate() const { return requests ? static_cast<double>(hits) / static_cast<double>(requests) : 0.0; }
};

// trace[token][layer] = the token's selected experts in router rank order (empty: a layer without
// experts). Every layer gets its own cache of `slots` slots.
ReplayResult replay_trace(const std::vector<std::vector<std::vector<int32_t>>>& trace, int32_t n_expert, int32_t slots,
                          EvictionPolicy policy);

}  // namespace ts
