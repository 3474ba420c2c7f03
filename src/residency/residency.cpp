#include "residency/residency.h"

#include <algorithm>

#include "util/error.h"
#include "util/sys_memory.h"

namespace ts {
namespace {

// The share of a layer's misses the host computes by default, with at least kHostShareThreads
// threads (docs/CUDA_LOG.md, "Misses computed on the host": a quarter won with 16 on the GPU machine's
// host and lost with 8, where an expert took the host longer than the link).
constexpr double kDefaultHostShare = 0.25;
constexpr int kHostShareThreads = 16;

uint64_t slot_row_bytes(const ExpertSource& src, bool direct) {  // one slot in every MoE layer
  uint64_t b = 0;
  for (int64_t l = 0; l < src.n_layer(); ++l)
    if (src.is_moe(l)) b += src.slot_bytes(l, direct);
  return b;
}

ResidencyChoice streamed(int32_t slots, const ExpertSource& src, const ResidencyOptions& o, const std::string& why) {
  ResidencyChoice c;
  c.mode = ResidencyMode::Streamed;
  c.slots_per_layer = std::min(slots, src.n_expert());
  c.expert_memory = slot_row_bytes(src, o.read.direct_io) * static_cast<uint64_t>(c.slots_per_layer);
  c.prefetch = o.prefetch == PrefetchMode::On || (o.prefetch == PrefetchMode::Auto && 2 * c.slots_per_layer <= src.n_expert());
  c.summary = fmt::format("experts streamed: {} of {} slots per layer ({} of cache, {}{}{}), {}", c.slots_per_layer,
                          src.n_expert(), format_bytes(c.expert_memory), o.policy == EvictionPolicy::LFU ? "LFU" : "LRU",
                          o.read.direct_io ? ", O_DIRECT" : "", c.prefetch ? ", prefetch" : "", why);
  return c;
}

}  // namespace

const char* residency_mode_name(ResidencyMode m) {
  switch (m) {
    case ResidencyMode::Auto: return "auto";
    case ResidencyMode::Resident: return "resident";
    case ResidencyMode::Mapped: return "mapped";
    case ResidencyMode::Streamed: return "streamed";
  }
  return "?";
}

ResidencyChoice choose_residency(const ResidencyOptions& o, const ExpertSource& src, const ResidencyNeeds& n) {
  if (o.host_share > 0)
    fail("--expert-host-share splits a device's misses between its link and the host's cores; on the CPU backend the "
         "host computes every expert already (drop the option, or add --device cuda)");
  const bool direct = o.read.direct_io;
  const uint64_t row = slot_row_bytes(src, direct);
  const uint64_t all = row * static_cast<uint64_t>(src.n_expert());
  const uint64_t taken = n.resident_core + n.runtime;
  const uint64_t room = n.budget > taken ? n.budget - taken : 0;
  const std::string budget_text = fmt::format("budget {} minus {} resident weights and {} for the run leaves {}",
                                              format_bytes(n.budget), format_bytes(n.resident_core),
                                              format_bytes(n.runtime), format_bytes(room));
  ResidencyChoice c;
  switch (o.mode) {
    case ResidencyMode::Mapped:
      c.mode = ResidencyMode::Mapped;
      c.summary = "experts mapped in place (the OS page cache decides what stays)";
      return c;
    case ResidencyMode::Resident:
      c.mode = ResidencyMode::Resident;
      c.expert_memory = all;
      c.summary = fmt::format("experts resident: {} loaded up front", format_bytes(all));
      return c;
    case ResidencyMode::Streamed:
      if (o.cache_slots > 0) return streamed(o.cache_slots, src, o, "--expert-cache-slots");
      if (o.cache_bytes > 0) {
        const uint64_t slots = o.cache_bytes / row;
        if (slots < 1)
          fail("--expert-cache-mb {} is less than one slot per layer, which takes {}", o.cache_bytes >> 20, format_bytes(row));
        return streamed(static_cast<int32_t>(std::min<uint64_t>(slots, INT32_MAX)), src, o, "--expert-cache-mb");
      }
      break;  // sized from the budget, as auto does
    case ResidencyMode::Auto:
      if (all <= room) {
        c.mode = ResidencyMode::Resident;
        c.expert_memory = all;
        c.summary = fmt::format("experts resident: {} loaded up front (auto: {})", format_bytes(all), budget_text);
        return c;
      }
      break;
  }
  const uint64_t slots = room / row;
  if (slots < 1)
    fail("not enough memory to stream experts: the {}, and one expert-cache slot per layer needs {}", budget_text,
         format_bytes(row));
  return streamed(static_cast<int32_t>(std::min<uint64_t>(slots, INT32_MAX)), src, o,
                  fmt::format("the largest cache that fits ({})", budget_text));
}

ResidencyChoice choose_device_residency(const ResidencyOptions& o, const ExpertSource& src, uint64_t device_slot_row,
                                        uint64_t host_room, bool host_computes) {
  ResidencyChoice c;
  if (o.mode == ResidencyMode::Mapped)
    fail("--expert-residency mapped is not available on a device backend: it computes from its own memory "
         "(use resident, or streamed with --expert-cache-mb for a cache in device memory)");
  if (o.mode != ResidencyMode::Streamed) {
    c.mode = ResidencyMode::Resident;
    c.expert_memory = src.total_expert_bytes();
    c.summary = fmt::format("experts resident in device memory: {} uploaded up front", format_bytes(c.expert_memory));
    return c;
  }
  int64_t slots = o.cache_slots;
  if (slots <= 0) {
    if (o.cache_bytes == 0)
      fail("--expert-residency streamed on a device backend needs --expert-cache-mb (device memory for the cache) or "
           "--expert-cache-slots");
    slots = static_cast<int64_t>(std::min<uint64_t>(o.cache_bytes / device_slot_row, INT32_MAX));
    if (slots < 1)
      fail("--expert-cache-mb {} is less than one slot per layer, which takes {} of device memory", o.cache_bytes >> 20,
           format_bytes(device_slot_row));
  }
  c.mode = ResidencyMode::Streamed;
  c.slots_per_layer = static_cast<int32_t>(std::min<int64_t>(slots, src.n_expert()));
  c.expert_memory = device_slot_row * static_cast<uint64_t>(c.slots_per_layer);
  // Prefetch only when asked: the copies are the bottleneck on a device, and wrong guesses cost more
  // than the hits they add (docs/CUDA.md, "Streamed experts").
  c.prefetch = o.prefetch == PrefetchMode::On;
  // A pinned copy of every expert makes a miss one copy at the link's rate; when the host cannot hold
  // it, misses are read from the files into pinned staging (the cache's size, twice) first.
  const uint64_t pinned = device_slot_row * static_cast<uint64_t>(src.n_expert());
  c.device_from_files = pinned > host_room;
  // Misses the host's cores compute from the pinned copy while the link copies the others. A share
  // asked for where it cannot apply is refused when nothing lies in host memory (the user can change
  // the budget) and noted when the backend's host threads cannot compute these experts (the model's).
  if (c.device_from_files && o.host_share > 0)
    fail("--expert-host-share {} computes misses from a pinned copy of every expert ({}), which does not fit the {} of "
         "host memory the budget leaves: drop the option, or raise --memory-budget-mb",
         o.host_share, format_bytes(pinned), format_bytes(host_room));
  c.host_share = c.device_from_files || !host_computes ? 0.0
                 : o.host_share >= 0 ? o.host_share
                 : o.host_threads >= kHostShareThreads ? kDefaultHostShare
                                                       : 0.0;
  const std::string feed =
      c.device_from_files
          ? fmt::format("from the files through pinned staging (a pinned copy of every expert, {}, does not fit the {} "
                        "of host memory the budget leaves{})", format_bytes(pinned), format_bytes(host_room),
                        o.read.direct_io ? "; O_DIRECT" : "")
          : fmt::format("from {} of pinned host memory", format_bytes(pinned));
  const std::string host =
      c.host_share > 0 ? fmt::format("; {:.0f}% of misses computed on the host", 100 * c.host_share)
      : o.host_share > 0 ? std::string("; no misses computed on the host (the backend's host threads cannot compute "
                                       "these experts)")
                         : std::string();
  c.summary = fmt::format("experts streamed into device memory: {} of {} slots per layer ({} of cache, {}{}), fed {}{}",
                          c.slots_per_layer, src.n_expert(), format_bytes(c.expert_memory),
                          o.policy == EvictionPolicy::LFU ? "LFU" : "LRU", c.prefetch ? ", prefetch" : "", feed, host);
  return c;
}

std::unique_ptr<ExpertStore> make_expert_store(const ResidencyChoice& c, const ResidencyOptions& o,
                                               std::shared_ptr<const ExpertSource> src, Backend& be,
                                               const std::vector<const uint8_t*>& maps) {
  switch (c.mode) {
    case ResidencyMode::Mapped: return make_mapped_experts(std::move(src), maps);
    case ResidencyMode::Resident: return make_resident_experts(std::move(src), be, o.read);
    case ResidencyMode::Streamed: {
      StreamOptions so;
      so.slots_per_layer = c.slots_per_layer;
      so.policy = o.policy;
      so.prefetch = c.prefetch;
      so.read = o.read;
      return make_streamed_experts(std::move(src), be, so);
    }
    case ResidencyMode::Auto: break;
  }
  fail("internal error: residency mode auto was not resolved");
}

}  // namespace ts
