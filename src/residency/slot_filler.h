// How a streamed store's slots get their experts: where the slot memory lives, how an expert is
// brought into a slot, and how it reads there. The store (streamed_experts.cpp) plans hits, misses
// and evictions the same way for both fillers:
//  - files: the reader pool preads the expert files into host slots (a backend that computes from
//    host memory, the CPU);
//  - device: slots in device memory, each filled by one copy on the transfer queue from pinned host
//    memory holding the expert in the backend's weight layout (a GPU backend): a pinned copy of
//    every expert made at load, or per-slot pinned staging that the reader pool fills from the
//    files. Events order each copy after the last compute that read the slot's previous expert,
//    and each compute after its copy, so no host thread waits for a copy.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "residency/expert_source.h"
#include "residency/reader_pool.h"

namespace ts {

class SlotFiller {
 public:
  using Done = std::function<void(const std::string& error)>;
  virtual ~SlotFiller() = default;

  virtual MemKind memory() const = 0;                     // where the slots are allocated
  virtual uint64_t slot_bytes(int64_t layer) const = 0;   // a slot able to take any expert of the layer
  // Starts filling slot `slot` (memory `at`) of `layer` with expert e and adds the bytes it moves to
  // `bytes`. Returns true when the slot is ready for any work issued after this call (a queued copy);
  // false when `done` will be called later, from another thread, with "" or the error, after which
  // the store calls landed() on its own thread before the slot is used.
  virtual bool fill(int64_t layer, int32_t e, int32_t slot, uint8_t* at, ReaderPool::Priority priority, Done done,
                    uint64_t& bytes) = 0;
  virtual void landed(int64_t layer, int32_t slot, uint8_t* at) {}
  // Stops the fill of `slot` that fill() left running (ReaderPool::cancel: Over, Finishing or
  // TooLate), adding the bytes it will not move to `unread`. A fill that is one queued copy cannot
  // be stopped (TooLate).
  virtual ReaderPool::Cancel cancel(int64_t layer, int32_t slot, uint64_t& unread) { return ReaderPool::Cancel::TooLate; }
  // The expert as it lies in a filled slot.
  virtual ExpertView view(int64_t layer, int32_t e, const uint8_t* at) const = 0;
  // The expert where the filler copies it from, when that is pinned host memory in the backend's
  // layout (ExpertWeights::on_host); false otherwise.
  virtual bool host_view(int64_t layer, int32_t e, ExpertView& v) const { return false; }
  // Ordering: before a lease on the slot is handed out, and whenever a lease on it is released.
  virtual void before_use(int64_t layer, int32_t slot) {}
  virtual void after_use(int64_t layer, int32_t slot) {}
};

struct ReadOptions;
// Reads from the source's files (buffered pread, or O_DIRECT) on a pool of reader threads.
std::unique_ptr<SlotFiller> make_file_filler(std::shared_ptr<const ExpertSource> src, const ReadOptions& o);
// Copies from pinned host memory into device slots. Every expert of `from` (taken through its
// leases, layer by layer) is packed into the backend's layout in pinned host memory up front;
// `from` may be dropped afterwards.
std::unique_ptr<SlotFiller> make_device_filler(ExpertStore& from, std::shared_ptr<const ExpertSource> src, Backend& be);
// The same, fed from the files: each miss is read into the slot's pinned staging, copied as read
// to the device and repacked there into its slot (host memory holds the cache's size once, not the
// experts; device memory one expert as read beside the slots).
std::unique_ptr<SlotFiller> make_device_file_filler(std::shared_ptr<const ExpertSource> src, Backend& be,
                                                    const ReadOptions& o);
// The bytes of one device slot of `layer`: its experts' parts in the backend's layout, aligned.
uint64_t device_slot_bytes(const ExpertSource& src, int64_t layer, const Backend& be);

}  // namespace ts
