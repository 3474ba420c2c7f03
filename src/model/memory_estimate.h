// The memory a run will need, computed from the validated hyper-parameters before the KV cache or
// any activation is allocated, and checked against what the process may use (MemAvailable, the
// cgroup limit, v1 or v2, and the address-space limit of `ulimit -v`). A run that cannot fit is
// refused up front with the sizes, instead of failing part-way with a bare "out of memory" (or
// being killed by the OOM killer) after minutes of work.
#pragma once
#include <cstdint>
#include <string>

#include "model/hparams.h"
#include "util/sys_memory.h"

namespace ts {

class Model;

struct MemoryEstimate {
  // Mapped weights that count as resident: pages come in as they are used, and every token uses them.
  // The whole file for a dense model; for an MoE model only its resident core (every tensor but the
  // experts): mapped experts are the page cache's to drop (--expert-residency mapped), and loaded or
  // streamed experts are `experts` below.
  uint64_t weights = 0;
  uint64_t experts = 0;      // memory the expert store allocates: every expert, or the slot cache
  uint64_t kv_cache = 0;     // f32 K and V of every layer for every context position
  uint64_t activations = 0;  // the forward pass's per-batch buffers, the MoE layer's included
  uint64_t logits = 0;       // host logits rows and the sampler's per-vocabulary buffers
  int64_t n_ctx = 0, batch = 0;
  uint64_t buffers() const { return kv_cache + activations + logits; }
  uint64_t resident() const { return weights + experts + buffers(); }
  std::string describe() const;  // "weights 98.0 MiB, KV cache 1.2 GiB for 4096 positions, ..."
};

// What a process holds beyond the estimate (the binary, its libraries, the allocator's and the
// threads' overhead): 9 MiB of peak RSS measured for a run of a tiny fixture, so 16 MiB. Small on
// purpose: the memory-honesty tests (tests/residency/memory_test.cpp) run a model under a 56 MiB
// limit, and `auto` residency sizes its expert cache from the same sum.
constexpr uint64_t kRunSlack = uint64_t{16} << 20;

// n_ctx: KV positions; batch: tokens per forward call; logit_rows: rows of logits the caller keeps.
// `weights` as MemoryEstimate::weights says; `experts` is left 0.
MemoryEstimate estimate_run_memory(const HParams& h, uint64_t weights, int64_t n_ctx, int64_t batch, int64_t logit_rows);
// The same for a loaded model, its expert store included.
MemoryEstimate estimate_run_memory(const Model& m, int64_t n_ctx, int64_t batch, int64_t logit_rows);

// Throws ts::Error stating the sizes when the estimate does not fit. `rss` and `vm` are what the
// process holds now (its mapped model and its threads' stacks included); the first overload reads
// them and the limits.
void check_run_memory(const MemoryEstimate& e);
void check_run_memory(const MemoryEstimate& e, const MemoryLimits& limits, uint64_t rss, uint64_t vm);

}  // namespace ts
