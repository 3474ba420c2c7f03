// The routed-expert layer shared by every MoE family: router logits (f32) -> the family's contract
// -> experts in ranking order -> expert FFNs -> weighted sum in ranking order.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "moe/expert_store.h"
#include "moe/router.h"

namespace ts {

// The order in which experts are *computed* (never the order they are summed in). Only tests
// change it, to show the output bytes do not depend on it.
enum class ExpertOrder { Ascending, Descending };

struct MoeShape {
  int64_t n_embd, n_ff, n_expert, k;
  RouterContract contract;
  Activation activation;
};

class MoeLayer {
 public:
  MoeLayer(Backend& be, const MoeShape& s, int64_t max_tokens);
  ~MoeLayer();
  MoeLayer(const MoeLayer&) = delete;
  MoeLayer& operator=(const MoeLayer&) = delete;

  // out = MoE(x) for x.n tokens; `layer` selects the experts and names errors.
  void forward(ExpertStore& store, int64_t layer, const Mat& router, const float* router_bias, Act x, Act out,
               ExpertOrder order);
  const Routing& last_routing() const { return routing_; }

 private:
  Backend& be_;
  MoeShape s_;
  Act logits_, xe_, down_, slots_;
  std::vector<float> host_logits_;
  Routing routing_;
  std::vector<std::vector<int32_t>> tokens_, slots_of_;  // per expert: token rows, (token, rank) slots
};

}  // namespace ts
