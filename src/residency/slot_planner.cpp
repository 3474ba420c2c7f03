#include "residency/slot_planner.h"

#include "util/error.h"

namespace ts {

SlotPlanner::SlotPlanner(int32_t n_slots, int32_t n_experts, EvictionPolicy policy)
    : policy_(policy), expert_(n_slots, -1), state_(n_slots, State::Empty), slot_of_(n_experts, -1),
      uses_(n_experts, 0), last_(n_experts, 0) {
  if (n_slots < 1) fail("an expert cache needs at least one slot per layer (got {})", n_slots);
  if (n_experts < 1) fail("internal error: a slot planner for {} experts", n_experts);
}

void SlotPlanner::check_expert(int32_t e) const {
  if (e < 0 || e >= n_experts()) fail("internal error: expert {} requested from a layer of {} experts", e, n_experts());
}

std::vector<uint8_t> SlotPlanner::blocked_slots(std::span<const int32_t> protect) const {
  std::vector<uint8_t> blocked(expert_.size(), 0);
  for (int32_t s : protect) {
    if (s < 0 || s >= n_slots()) fail("internal error: protected slot {} of {}", s, n_slots());
    blocked[s] = 1;
  }
  for (size_t s = 0; s < state_.size(); ++s)
    if (state_[s] == State::Filling) blocked[s] = 1;  // its memory is being written
  return blocked;
}

int32_t SlotPlanner::victim(const std::vector<uint8_t>& blocked) const {
  int32_t best = -1;
  for (int32_t s = 0; s < n_slots(); ++s) {
    if (blocked[s]) continue;
    if (expert_[s] < 0) return s;  // empty slots first, lowest index first
    if (best < 0) {
      best = s;
      continue;
    }
    const int32_t a = expert_[s], b = expert_[best];
    const bool better = policy_ == EvictionPolicy::LFU
                            ? (uses_[a] < uses_[b] || (uses_[a] == uses_[b] && last_[a] < last_[b]))
                            : last_[a] < last_[b];
    if (better) best = s;
  }
  return best;
}

size_t SlotPlanner::fit(std::span<const int32_t> requested, std::span<const int32_t> protect) const {
  std::vector<uint8_t> blocked = blocked_slots(protect);
  // Hits block their own slot, misses need one other unblocked slot each: a prefix fits while the
  // unblocked slots cover both.
  int64_t free = 0;
  for (uint8_t b : blocked) free += !b;
  std::vector<uint8_t> seen(slot_of_.size(), 0);
  for (size_t i = 0; i < requested.size(); ++i) {
    const int32_t e = requested[i];
    check_expert(e);
    if (seen[e]++) fail("internal error: expert {} requested twice in one plan", e);
    const int32_t s = slot_of_[e];
    if (s >= 0) {
      if (!blocked[s]) {
        blocked[s] = 1;
        // The misses before it may have been counted on this very slot: then the prefix ends here.
        if (--free < 0) return i;
      }
    } else if (free > 0) {
      --free;
    } else {
      return i;
    }
  }
  return requested.size();
}

SlotPlan SlotPlanner::plan(std::span<const int32_t> requested, std::span<const int32_t> protect, bool count_use) {
  // Validate the whole plan before changing any state, so a refused plan leaves the planner as it was.
  const size_t n_fit = fit(requested, protect);
  if (n_fit < requested.size())
    fail("expert cache: {} slots cannot take expert {} without evicting a protected or in-use slot "
         "({} of the {} requested experts fit)",
         n_slots(), requested[n_fit], n_fit, requested.size());
  std::vector<uint8_t> blocked = blocked_slots(protect);
  for (int32_t e : requested)
    if (slot_of_[e] >= 0) blocked[slot_of_[e]] = 1;  // hits of this plan are never its victims
  SlotPlan p;
  p.entries.reserve(requested.size());
  for (int32_t e : requested) {
    SlotPlan::Entry en;
    en.expert = e;
    if (slot_of_[e] >= 0) {
      en.slot = slot_of_[e];
      en.hit = true;
    } else {
      const int32_t s = victim(blocked);  // exists: fit() counted it
      en.slot = s;
      en.evicted = expert_[s];
      if (en.evicted >= 0) slot_of_[en.evicted] = -1;
      expert_[s] = e;
      state_[s] = State::Filling;
      slot_of_[e] = s;
      blocked[s] = 1;
    }
    if (count_use) {
      ++uses_[e];
      last_[e] = ++clock_;
    }
    p.entries.push_back(en);
  }
  return p;
}

void SlotPlanner::note_use(int32_t expert) {
  check_expert(expert);
  ++uses_[expert];
  last_[expert] = ++clock_;
}

void SlotPlanner::commit(int32_t slot) {
  if (state_.at(slot) != State::Filling) fail("internal error: commit of slot {}, which is not being filled", slot);
  state_[slot] = State::Valid;
}

void SlotPlanner::abandon(int32_t slot) {
  if (state_.at(slot) != State::Filling) fail("internal error: failed read of slot {}, which is not being filled", slot);
  slot_of_[expert_[slot]] = -1;
  expert_[slot] = -1;
  state_[slot] = State::Empty;
}

}  // namespace ts
