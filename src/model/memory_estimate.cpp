#include "model/memory_estimate.h"

#include <algorithm>

#include "model/model.h"
#include "util/error.h"

namespace ts {
namespace {

constexpr uint64_t kF = sizeof(float);

uint64_t mul(uint64_t a, uint64_t b) { return checked_mul(a, b, "memory estimate"); }

}  // namespace

std::string MemoryEstimate::describe() const {
  return fmt::format("weights {} (mapped), {}KV cache {} for {} positions, activations {} for batches of {}, logits {}",
                     format_bytes(weights), experts ? fmt::format("experts {}, ", format_bytes(experts)) : std::string(),
                     format_bytes(kv_cache), n_ctx, format_bytes(activations), batch, format_bytes(logits));
}

// Mirrors the buffers of model/forward.cpp, model/kv_cache.cpp and moe/moe_layer.cpp; the memory
// test (tests/model/memory_estimate_test.cpp) checks it stays above what a run really takes.
MemoryEstimate estimate_run_memory(const HParams& h, uint64_t weights, int64_t n_ctx, int64_t batch, int64_t logit_rows) {
  MemoryEstimate e;
  e.n_ctx = n_ctx;
  e.batch = batch;
  e.weights = weights;
  const uint64_t B = static_cast<uint64_t>(batch), V = static_cast<uint64_t>(h.n_vocab);
  const uint64_t E = static_cast<uint64_t>(h.n_embd), q = static_cast<uint64_t>(h.n_head * h.head_dim),
                 kv = static_cast<uint64_t>(h.n_head_kv * h.head_dim);
  e.kv_cache = mul(mul(mul(static_cast<uint64_t>(h.n_layer), static_cast<uint64_t>(n_ctx)), kv), 2 * kF);
  uint64_t per_token = 4 * E + 2 * q + 2 * kv;  // x h o ffn_out, q att, k v
  if (h.is_moe()) {
    const uint64_t F = static_cast<uint64_t>(h.n_ff_expert), X = static_cast<uint64_t>(h.n_expert),
                   k = static_cast<uint64_t>(h.n_expert_used);
    per_token += 2 * X + 2 * E + 3 * F + k * E;  // router logits (device and host), xe down, gate up act, slots
  } else {
    per_token += 3 * static_cast<uint64_t>(h.n_ff);  // gate up act
  }
  // The output head runs in passes of a bounded logits buffer (64 MiB, at least one row).
  const uint64_t head_rows = std::clamp<uint64_t>((uint64_t{64} << 20) / (V * kF), 1, B);
  e.activations = mul(mul(per_token, B) + mul(head_rows, E + V), kF);
  // Host logits rows, plus the sampler's candidates (8 bytes), probabilities (8) and counts (4).
  e.logits = mul(mul(static_cast<uint64_t>(logit_rows), V), kF) + mul(V, 20);
  return e;
}

MemoryEstimate estimate_run_memory(const Model& m, int64_t n_ctx, int64_t batch, int64_t logit_rows) {
  MemoryEstimate e = estimate_run_memory(m.hp(), m.resident_weight_bytes(), n_ctx, batch, logit_rows);
  if (m.hp().is_moe() && m.residency().mode != ResidencyMode::Mapped) e.experts = m.residency().expert_memory;
  return e;
}

void check_run_memory(const MemoryEstimate& e, const MemoryLimits& lim, uint64_t rss, uint64_t vm) {
  const uint64_t need = checked_add(e.resident(), kRunSlack, "memory estimate");
  const uint64_t may = lim.budget(rss);
  if (checked_add(rss, need, "memory estimate") > may)
    fail("not enough memory for this run: it needs about {} ({}) on top of the {} this process holds, but it may use "
         "{} in all (MemAvailable {}{}); reduce --ctx or --batch, or use a smaller model",
         format_bytes(need), e.describe(), format_bytes(rss), format_bytes(may), format_bytes(lim.mem_available),
         lim.cgroup_limit ? fmt::format(", cgroup limit {}", format_bytes(lim.cgroup_limit)) : std::string());
  if (lim.address_space_limit) {
    // The model is mapped and the threads are started already, so `vm` counts them; the experts'
    // memory is still to come.
    const uint64_t to_come = need - e.weights;
    const uint64_t left = lim.address_space_limit > vm ? lim.address_space_limit - vm : 0;
    if (to_come > left)
      fail("not enough address space for this run: it needs about {} more ({}), but the address-space limit "
           "(ulimit -v) of {} leaves {}; reduce --ctx or --batch, or raise the limit",
           format_bytes(to_come), e.describe(), format_bytes(lim.address_space_limit), format_bytes(left));
  }
}

void check_run_memory(const MemoryEstimate& e) {
  check_run_memory(e, read_memory_limits(), current_rss_bytes(), current_vm_bytes());
}

}  // namespace ts
