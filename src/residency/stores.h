// The expert stores behind the ExpertStore seam, one per residency mode:
//  - mapped: every expert read in place from the memory-mapped files (the OS decides what stays);
//  - resident: every expert read up front into backend memory;
//  - streamed: a per-layer cache of slots in backend memory, planned by SlotPlanner and filled by
//    a pool of reader threads (buffered pread, or O_DIRECT), or on a GPU from pinned host memory.
// All three hand out the same bytes for an expert, so the model's output cannot depend on the mode.
#pragma once
#include <memory>
#include <vector>

#include "residency/expert_source.h"
#include "residency/reader_pool.h"
#include "residency/slot_planner.h"

namespace ts {

struct ReadOptions {
  bool direct_io = false;
  int threads = 4;                     // reader threads (see docs/RESIDENCY.md for the measurement)
  uint64_t chunk_bytes = 1ull << 20;   // bytes per pread
  ReaderPool::ReadFn read;             // empty: pread (tests inject failures here)
};

struct StreamOptions {
  int32_t slots_per_layer = 0;
  EvictionPolicy policy = EvictionPolicy::LFU;
  bool prefetch = false;  // honour ExpertStore::prefetch (one-layer-ahead prediction)
  // The fraction of a call's misses handed out where they lie for the backend's host threads, when
  // offered (ExpertStore::offer_host) and the filler has them in pinned host memory.
  double host_share = 0;
  ReadOptions read;
};

// maps: the start of each of the source's files in memory (the caller keeps them mapped).
std::unique_ptr<ExpertStore> make_mapped_experts(std::shared_ptr<const ExpertSource> src,
                                                 const std::vector<const uint8_t*>& maps);
std::unique_ptr<ExpertStore> make_resident_experts(std::shared_ptr<const ExpertSource> src, Backend& be,
                                                   const ReadOptions& o);
// Every expert of `from` (taken through its leases, layer by layer) uploaded to the backend's own
// memory (Backend::upload, upload_f32), for backends whose weight_memory() is Device. `from` is only
// read here and may be dropped afterwards.
std::unique_ptr<ExpertStore> make_device_experts(ExpertStore& from, const ExpertSource& src, Backend& be);
std::unique_ptr<ExpertStore> make_streamed_experts(std::shared_ptr<const ExpertSource> src, Backend& be,
                                                   const StreamOptions& o);
// The streamed store for a backend whose weights live in its own memory: slots in device memory,
// filled by copies on the transfer queue (residency/slot_filler.h) from a pinned host copy of every
// expert of `from` (packed up front in the backend's layout), or, with `from` null, from the files
// (read with o.read into per-slot pinned staging).
std::unique_ptr<ExpertStore> make_device_streamed_experts(ExpertStore* from, std::shared_ptr<const ExpertSource> src,
                                                          Backend& be, const StreamOptions& o);

}  // namespace ts
