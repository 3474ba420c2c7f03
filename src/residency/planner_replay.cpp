#include "residency/planner_replay.h"

#include <algorithm>

#include "util/error.h"

namespace ts {

ReplayResult replay_trace(const std::vector<std::vector<std::vector<int32_t>>>& trace, int32_t n_expert, int32_t slots,
                          EvictionPolicy policy) {
  ReplayResult r;
  std::vector<SlotPlanner> layers;
  std::vector<int32_t> pending;
  for (const auto& token : trace) {
    if (layers.size() < token.size())
      for (size_t l = layers.size(); l < token.size(); ++l) layers.emplace_back(slots, n_expert, policy);
    for (size_t l = 0; l < token.size(); ++l) {
      SlotPlanner& p = layers[l];
      pending.clear();
      for (int32_t e : token[l])
        if (std::find(pending.begin(), pending.end(), e) == pending.end()) pending.push_back(e);
      std::stable_partition(pending.begin(), pending.end(), [&](int32_t e) { return p.slot_of(e) >= 0; });
      while (!pending.empty()) {
        const size_t n = p.fit(pending, {});
        if (n == 0) fail("internal error: replay cannot place expert {}", pending.front());
        const SlotPlan plan = p.plan({pending.data(), n}, {});
        for (const SlotPlan::Entry& e : plan.entries) {
          ++r.requests;
          r.hits += e.hit;
          if (!e.hit) p.commit(e.slot);
        }
        pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
      }
    }
  }
  return r;
}

}  // namespace ts
