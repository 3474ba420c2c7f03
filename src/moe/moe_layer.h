// The routed-expert layer shared by every MoE family: router logits (f32) -> the family's contract
// -> the layer's distinct experts handed to the ExpertStore in router rank order -> expert FFNs in
// the order the store makes them ready -> weighted sum in router rank order.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "moe/router.h"
#include "residency/expert_store.h"

namespace ts {

// The order in which experts are *asked for* (and, for stores whose experts are all in memory,
// computed): router rank order of first appearance by default; by expert index only in tests, to
// show the output bytes do not depend on it.
enum class ExpertOrder { Router, Ascending, Descending };

struct MoeShape {
  int64_t n_embd, n_ff, n_expert, k;
  RouterContract contract;
  Activation activation;
};

// The next MoE layer's router and the norm in front of it: with these the layer predicts the next
// layer's experts from its own input and lets the store read them ahead (one-layer-ahead prefetch).
struct NextRouter {
  const Mat* router = nullptr;  // nullptr: no next MoE layer (or no prediction wanted)
  const float* bias = nullptr;
  const float* norm = nullptr;
  float norm_eps = 0;
};

// Steps of at most this many rows may run their experts side by side (Backend::ffn_many).
inline constexpr int64_t kTogetherTokens = 16;

class MoeLayer {
 public:
  MoeLayer(Backend& be, const MoeShape& s, int64_t max_tokens);
  ~MoeLayer();
  MoeLayer(const MoeLayer&) = delete;
  MoeLayer& operator=(const MoeLayer&) = delete;

  // out = MoE(x) for x.n tokens; `layer` selects the experts and names errors. `residual` is the
  // un-normalised input (the prediction for `next` normalises it with the next layer's norm). With
  // add_to_residual, residual += MoE(x) instead and out is scratch: a backend that runs the layer as
  // one operation adds as it sums the ranks, saving a pass (the bytes of a sum, then an add).
  void forward(ExpertStore& store, int64_t layer, const Mat& router, const float* router_bias, Act x, Act out,
               ExpertOrder order, Act residual = {}, const NextRouter& next = {}, bool add_to_residual = false);
  // Empty when the backend ran the layer (the routing stayed on the device); without weights when
  // only the experts came back to the host (experts that move, on such a backend).
  const Routing& last_routing() const { return routing_; }
  // Whether the last forward() ran as one backend operation (Backend::routed_experts).
  bool last_on_backend() const { return on_backend_; }

 private:
  void route_tokens(const Mat& router, const float* bias, Act x, int64_t layer, Routing& out);
  void distinct_experts(const Routing& r, ExpertOrder order, std::vector<int32_t>& out);
  void request_experts(ExpertStore& store, int64_t layer, ExpertOrder order, Act residual, const NextRouter& next);
  void forward_in_waves(ExpertStore& store, int64_t layer, const Mat& router, const float* router_bias, Act x, Act out,
                        ExpertOrder order, Act residual, const NextRouter& next, bool add_to_residual);
  void compute_expert(const ExpertLease& lease, Act x);
  bool compute_together(Act x);
  const std::vector<ExpertView>& layer_table(ExpertStore& store, int64_t layer);

  Backend& be_;
  MoeShape s_;
  Act logits_, xe_, down_, slots_, predict_x_;
  Act xe_all_, down_all_;  // compute_together: every pair's gathered input and output, by expert
  std::vector<float> host_logits_;
  Routing routing_, predicted_;
  std::vector<int32_t> experts_, predicted_experts_;
  std::vector<uint8_t> seen_;
  std::vector<std::vector<int32_t>> tokens_, slots_of_;  // per expert: token rows, (token, rank) slots
  std::vector<std::vector<ExpertView>> tables_;          // per layer: every expert, for routed_experts
  const ExpertStore* table_store_ = nullptr;             // the store the tables came from
  std::vector<ExpertView> wave_;                         // forward_in_waves: the wave's experts by index
  std::vector<ExpertLease> leases_;                      // ... and their leases
  std::vector<FfnJob> jobs_;                             // compute_together: one per expert
  bool on_backend_ = false;
};

}  // namespace ts
