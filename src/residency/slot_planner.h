// The slot-cache planner of one layer: which requested experts are already in a slot (hits), which
// slot each miss is read into, and what that evicts. Pure bookkeeping: no I/O, no memory, no
// threads, so the CPU store and the CUDA backend's VRAM cache share it, and every rule is unit
// tested (tests/residency/slot_planner_test.cpp).
//
// Rules:
//  - a miss takes an empty slot first (lowest index), otherwise evicts a victim chosen by the
//    policy: LFU (the default) evicts the expert with the lowest cumulative use count, ties to the
//    least recently used; LRU evicts the least recently used. Remaining ties go to the lowest slot.
//  - never evicted: a protected slot (the caller's in-flight work: leased or still to be handed
//    out), a slot being filled, or a slot that this same plan hands out. Asking for more misses than
//    there are evictable slots is refused with an error, never served by evicting one of those.
//  - a slot is Filling from plan() until commit() (read complete: Valid) or abandon() (read failed:
//    Empty again, so a failed read can never leave stale or half-read weights behind).
//  - uses: plan() counts one use per requested expert (hits and misses) and stamps it as most
//    recent, in request order; a prefetch plan (count_use = false) neither counts nor stamps, so a
//    wrong prediction does not make its expert look popular.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace ts {

enum class EvictionPolicy { LFU, LRU };

struct SlotPlan {
  struct Entry {
    int32_t expert = -1;
    int32_t slot = -1;
    bool hit = false;       // already in the slot (valid, or still being filled)
    int32_t evicted = -1;   // miss only: the expert that was in the slot, or -1 for an empty slot
  };
  std::vector<Entry> entries;  // one per requested expert, in request order
};

class SlotPlanner {
 public:
  enum class State : uint8_t { Empty, Filling, Valid };

  SlotPlanner(int32_t n_slots, int32_t n_experts, EvictionPolicy policy);

  // How many of `requested` (distinct experts), taken in order, plan() could place now: the longest
  // prefix whose misses fit into slots that are neither protected, filling, nor hits of the prefix.
  size_t fit(std::span<const int32_t> requested, std::span<const int32_t> protect) const;
  // Plans all of `requested`; throws ts::Error (naming the shortfall) if fit() < requested.size().
  SlotPlan plan(std::span<const int32_t> requested, std::span<const int32_t> protect, bool count_use = true);

  // Counts one use of an expert served without a slot (as plan() counts its requests).
  void note_use(int32_t expert);

  void commit(int32_t slot);  // the slot's read completed: Filling -> Valid
  void abandon(int32_t slot);  // the slot's read failed: Filling -> Empty, its expert not resident

  int32_t slot_of(int32_t expert) const { return slot_of_[expert]; }  // -1: not in any slot
  int32_t expert_in(int32_t slot) const { return expert_[slot]; }     // -1: empty
  State state(int32_t slot) const { return state_[slot]; }
  int64_t uses(int32_t expert) const { return uses_[expert]; }
  int32_t n_slots() const { return static_cast<int32_t>(expert_.size()); }
  int32_t n_experts() const { return static_cast<int32_t>(slot_of_.size()); }

 private:
  // The best victim among slots not in `blocked`, or -1 when every slot is blocked.
  int32_t victim(const std::vector<uint8_t>& blocked) const;
  std::vector<uint8_t> blocked_slots(std::span<const int32_t> protect) const;
  void check_expert(int32_t e) const;

  EvictionPolicy policy_;
  std::vector<int32_t> expert_;    // per slot
  std::vector<State> state_;       // per slot
  std::vector<int32_t> slot_of_;   // per expert
  std::vector<int64_t> uses_;      // per expert, cumulative (kept while not resident)
  std::vector<uint64_t> last_;     // per expert, the stamp of its latest use (0: never)
  uint64_t clock_ = 0;
};

}  // namespace ts
