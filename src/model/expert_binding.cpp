#include "model/expert_binding.h"

#include "model/tensor_binding.h"
#include "util/error.h"
#include "util/sys_memory.h"

namespace ts {
namespace {

// What a run allocates besides its weights: the KV cache, the forward pass's and MoE layer's
// per-batch buffers, host logits, and a slack for the binary, allocator and threads.
uint64_t runtime_bytes(const HParams& h, const RunShape& r) {
  const uint64_t F = sizeof(float), B = static_cast<uint64_t>(r.batch), V = static_cast<uint64_t>(h.n_vocab);
  const uint64_t E = static_cast<uint64_t>(h.n_embd), q = static_cast<uint64_t>(h.n_head * h.head_dim);
  const uint64_t kv = static_cast<uint64_t>(h.n_head_kv * h.head_dim), X = static_cast<uint64_t>(h.n_expert);
  const uint64_t ff = static_cast<uint64_t>(h.n_ff_expert), k = static_cast<uint64_t>(h.n_expert_used);
  const uint64_t kv_cache = checked_mul(static_cast<uint64_t>(h.n_layer) * static_cast<uint64_t>(r.n_ctx), kv * 2 * F, "KV cache");
  const uint64_t per_token = 4 * E + 2 * q + 2 * kv + V + 2 * X + 3 * E + 3 * ff + k * E;
  const uint64_t logits = checked_mul(static_cast<uint64_t>(r.logit_rows), V * F, "logits") + V * 20;
  return kv_cache + checked_mul(per_token * F, B, "activations") + logits + (uint64_t{64} << 20);
}

}  // namespace

std::shared_ptr<const ExpertSource> expert_source_from_gguf(const GgufFile& g, const HParams& h, const Family& f) {
  const uint64_t E = static_cast<uint64_t>(h.n_embd), F = static_cast<uint64_t>(h.n_ff_expert);
  const uint64_t X = static_cast<uint64_t>(h.n_expert);
  std::vector<ExpertLayerFiles> layers(h.n_layer);
  const int n_parts = f.expert_bias ? kExpertParts : 3;
  for (int64_t l = 0; l < h.n_layer; ++l) {
    for (int p = 0; p < n_parts; ++p) {
      const bool down = p == kDown || p == kDownBias;
      const std::string name = expert_tensor_name(l, p);
      const GgufTensor& t = p < 3 ? check_tensor(g, name, {down ? F : E, down ? E : F, X})
                                  : check_tensor(g, name, {down ? E : F, X});
      ExpertPartInfo& part = layers[l].part[p];
      part.tensor = name;
      part.type = t.type;
      part.rows = p < 3 ? static_cast<int64_t>(down ? E : F) : 1;
      part.cols = static_cast<int64_t>(t.dims[0]);
      part.bytes = t.row_bytes() * static_cast<uint64_t>(part.rows);
      layers[l].stack_offset[p] = g.data_offset() + t.offset;
    }
  }
  return std::make_shared<ExpertSource>(std::vector<std::string>{g.path()}, std::move(layers), static_cast<int32_t>(X));
}

BoundExperts bind_experts(std::shared_ptr<const ExpertSource> src, const GgufFile& g, uint64_t resident_core,
                          const HParams& h, const ResidencyOptions& o, const RunShape& run, Backend& be) {
  ResidencyNeeds needs;
  needs.resident_core = resident_core;
  needs.runtime = runtime_bytes(h, run);
  needs.budget = o.memory_budget ? o.memory_budget : read_memory_limits().budget(current_rss_bytes());
  BoundExperts b;
  b.choice = choose_residency(o, *src, needs);
  b.source = src;
  // The mapped store reads the experts where they lie: for a GGUF source, in the model's own map.
  std::vector<const uint8_t*> maps;
  if (b.choice.mode == ResidencyMode::Mapped) maps.push_back(g.file().data());
  b.store = make_expert_store(b.choice, o, std::move(src), be, maps);
  return b;
}

}  // namespace ts
