// The forward pass, written once for every family against the Backend interface: embeddings, then
// per layer attention and FFN/MoE with the family's contracts, then the final norm and head.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "moe/moe_layer.h"

namespace ts {

struct ForwardOptions {
  int64_t max_batch = 256;  // tokens per forward call (prefill chunk)
  ExpertOrder expert_order = ExpertOrder::Router;
};

class Forward {
 public:
  Forward(const Model& m, Backend& be, KvCache& kv, const ForwardOptions& opt = {});
  ~Forward();
  Forward(const Forward&) = delete;
  Forward& operator=(const Forward&) = delete;

  // Runs n tokens (n <= max_batch) at positions kv.n_past.. and advances the cache. Writes the
  // logits of every token ([n][n_vocab]) when all_logits, else of the last token only ([n_vocab]).
  // Logits are raw (not normalised): only the sampler normalises.
  void run(const int32_t* ids, int64_t n, bool all_logits, float* logits);
  int64_t max_batch() const { return opt_.max_batch; }
  // Routed experts of the last run, per MoE layer (empty for dense models): for instrumentation.
  const Routing& routing(int64_t layer) const { return moe_routing_[layer]; }

 private:
  void attention_block(int64_t l, Act x, int64_t n, int64_t pos0);
  void ffn_block(int64_t l, Act x, int64_t n);

  const Model& m_;
  Backend& be_;
  KvCache& kv_;
  ForwardOptions opt_;
  std::unique_ptr<MoeLayer> moe_;
  std::vector<Routing> moe_routing_;
  std::vector<RopeTable> rope_;  // per layer, for the current call's positions
  Act x_, h_, q_, k_, v_, att_, o_, gate_, up_, ffn_act_, ffn_out_, logits_;
};

}  // namespace ts
