// Expert residency: which store a model's routed experts come from, and how big its cache is.
// `auto` (the default) keeps every expert resident when they fit the memory budget, and otherwise
// streams them through the largest cache that fits, so the process stays inside the memory it was
// given (--memory-budget-mb, or the cgroup limit and MemAvailable).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "residency/stores.h"

namespace ts {

enum class ResidencyMode { Auto, Resident, Mapped, Streamed };
// One-layer-ahead prefetch (streamed only). Auto turns it on where docs/RESIDENCY.md measured it to
// win: a cache of at most half of each layer's experts, where misses are frequent enough that
// reading the next layer's predicted experts during this layer's compute pays for the wrong guesses.
enum class PrefetchMode { Auto, On, Off };
const char* residency_mode_name(ResidencyMode m);

struct ResidencyOptions {
  ResidencyMode mode = ResidencyMode::Auto;
  uint64_t cache_bytes = 0;        // streamed: slot memory over all layers (--expert-cache-mb); 0: unset
  int32_t cache_slots = 0;         // streamed: slots per layer (--expert-cache-slots); 0: unset
  uint64_t memory_budget = 0;      // --memory-budget-mb; 0: the cgroup limit and MemAvailable
  EvictionPolicy policy = EvictionPolicy::LFU;
  PrefetchMode prefetch = PrefetchMode::Auto;
  double host_share = -1;          // streamed on a device: --expert-host-share; < 0: the default
  int host_threads = 0;            // the threads that would compute those misses (-t)
  ReadOptions read;
};

// What the model's experts will cost, and what the rest of the run needs, for the auto decision.
struct ResidencyNeeds {
  uint64_t budget = 0;          // the memory the process may use in all
  uint64_t resident_core = 0;   // non-expert weights (mapped, so they count as resident)
  uint64_t runtime = 0;         // KV cache, activations, logits, slack
};

struct ResidencyChoice {
  ResidencyMode mode = ResidencyMode::Mapped;
  int32_t slots_per_layer = 0;  // streamed only
  uint64_t expert_memory = 0;   // bytes of backend memory the store holds (resident or slots)
  bool prefetch = false;        // streamed only: one-layer-ahead prefetch, `auto` resolved
  bool device_from_files = false;  // streamed on a device backend: slots fed from the files, not a pinned copy
  double host_share = 0;           // streamed on a device backend: the share of misses computed on the host
  std::string summary;          // one line for the user: mode, cache, and why
};

// Decides the mode and cache size. Refuses (ts::Error with the sizes) a budget that cannot hold one
// slot per layer, or a cache option that gives less than one slot per layer.
ResidencyChoice choose_residency(const ResidencyOptions& o, const ExpertSource& src, const ResidencyNeeds& n);

// The same for a backend whose weights live in its own memory (Backend::weight_memory() == Device):
// auto and resident upload every expert there; streamed keeps a slot cache in device memory, sized
// by --expert-cache-mb (over device_slot_row, the bytes of one slot in every MoE layer in the
// backend's layout) or --expert-cache-slots, fed from a pinned copy of every expert when it fits in
// host_room (the host memory the budget leaves), else from the files through pinned staging;
// mapped is refused. host_computes: whether the backend's host threads can compute these experts
// (Backend::computes_on_host), without which no share of the misses goes to them.
ResidencyChoice choose_device_residency(const ResidencyOptions& o, const ExpertSource& src, uint64_t device_slot_row,
                                        uint64_t host_room, bool host_computes);

// maps: the source's files in memory (used by the mapped store only).
std::unique_ptr<ExpertStore> make_expert_store(const ResidencyChoice& c, const ResidencyOptions& o,
                                               std::shared_ptr<const ExpertSource> src, Backend& be,
                                               const std::vector<const uint8_t*>& maps);

}  // namespace ts
