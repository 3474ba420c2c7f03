// The seam between the routed-expert layer and wherever experts live. The MoE layer hands the store
// a layer's whole routed set once, right after routing; the store plans hits, misses and evictions
// for the set at once and starts the reads; the layer then takes leases on experts in the order
// they become ready. A lease keeps its expert's memory valid (its slot cannot be evicted) until the
// lease is released, so a slot cache can never overwrite weights that are still being multiplied.
// Output bytes cannot depend on the order of readiness: the layer sums expert outputs in router
// rank order (moe/moe_layer.cpp, Backend::combine_ranked).
#pragma once
#include <climits>
#include <cstdint>
#include <memory>
#include <span>

#include "backend/backend.h"

namespace ts {

// One expert's weights (gate, up, down and gpt-oss's biases), in the backend's memory.
using ExpertView = ExpertWeights;

// Counters a store keeps from its construction (for --phases and the benchmarks).
struct ExpertStats {
  int64_t requests = 0;        // experts asked for (each layer call's distinct experts)
  int64_t hits = 0;            // ... that needed no read (resident, or already read by a prefetch)
  int64_t prefetch_hits = 0;   // hits on a slot that a prefetch filled (or is filling)
  int64_t reads = 0;           // experts read on demand
  int64_t prefetch_reads = 0;  // experts read ahead on a prediction
  int64_t prefetch_wasted = 0; // prefetched experts evicted before any use
  int64_t prefetch_cancelled = 0;  // prefetch reads stopped because their layer did not ask for them
  uint64_t bytes_read = 0;     // demand and prefetch reads together
  int64_t host_computed = 0;   // misses handed out where they lie, for the backend's host threads
};

class ExpertStore;

// An expert handed out by a store: valid until released (or destroyed). Move-only.
class ExpertLease {
 public:
  ExpertLease() = default;
  ExpertLease(ExpertLease&& o) noexcept { *this = std::move(o); }
  ExpertLease& operator=(ExpertLease&& o) noexcept;
  ExpertLease(const ExpertLease&) = delete;
  ExpertLease& operator=(const ExpertLease&) = delete;
  ~ExpertLease() { release(); }

  explicit operator bool() const { return store_ != nullptr; }
  int32_t expert() const { return expert_; }
  const ExpertView& view() const { return view_; }
  void release();

 private:
  friend class ExpertStore;
  ExpertStore* store_ = nullptr;
  int64_t layer_ = -1;
  int32_t expert_ = -1, slot_ = -1;
  ExpertView view_;
};

class ExpertStore {
 public:
  virtual ~ExpertStore() = default;

  // Starts one layer call: `experts` are the distinct routed experts, in router rank order of first
  // appearance (the order the planner breaks ties in). An earlier call whose experts were not all
  // handed out (an error stopped it) is abandoned.
  virtual void request(int64_t layer, std::span<const int32_t> experts) = 0;
  // The next requested expert that is ready, waiting for its read if none is; an empty lease once
  // every requested expert has been handed out. A failed read throws ts::Error naming the file,
  // the layer and the expert; nothing is handed out from a slot whose read did not complete.
  virtual ExpertLease next() = 0;
  // Lets the next request() hand out some of its misses where they lie, in pinned host memory
  // (ExpertWeights::on_host), instead of filling slots with them, for a backend that computes such
  // experts on host threads (Backend::computes_on_host for `act` and `tokens`). Only a store whose
  // slots are filled from such memory does; those leases come after every slot's.
  virtual void offer_host(Activation act, int64_t tokens) {}

  // Whether prefetch() does anything (so the caller can skip predicting).
  virtual bool wants_prefetch() const { return false; }
  // A prediction that `layer` will ask for `experts` soon: a store may start reading them. A wrong
  // prediction costs a read and a slot, never a wrong result.
  virtual void prefetch(int64_t layer, std::span<const int32_t> experts) {}

  virtual ExpertStats stats() const = 0;

  // Whether every expert is in backend memory for the store's lifetime, at the address its lease
  // gives, and a lease pins nothing. Then the MoE layer may take the whole layer's experts once and
  // hand them to Backend::routed_experts (a GPU routes and runs them with no host round trip).
  // Stores that move experts (a slot cache) say no: every layer call goes through request/next.
  virtual bool resident() const { return false; }
  // How many leases of one layer a caller may hold at once: with that many held, next() needs one
  // released before it can hand out another (a slot cache's slots per layer).
  virtual int32_t lease_limit(int64_t layer) const { return INT32_MAX; }

 protected:
  ExpertLease make_lease(int64_t layer, int32_t expert, int32_t slot, const ExpertView& v);
  // Called once per lease when it is released; `slot` is what make_lease was given.
  virtual void release(int64_t layer, int32_t slot) = 0;

 private:
  friend class ExpertLease;
};

}  // namespace ts
