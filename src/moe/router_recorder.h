// --router-hist: how often each expert of each layer was selected, and (with --router-trace) the
// selected ids of every token in every layer, written as JSON for scripts/plot_router.py and
// `turbospark router-replay`. Process-wide and off unless the CLI installs one, like the phase
// clock: the MoE layer records each routing it computes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "moe/router.h"

namespace ts {

class RouterRecorder {
 public:
  RouterRecorder(int64_t n_layer, int64_t n_expert, int64_t top_k, bool trace);
  void record(int64_t layer, const Routing& r);
  // {"num_layers","num_experts","top_k","tokens","counts":[[...]...]} plus "trace":[token][layer][k]
  // when tracing. Layers without experts are zero rows (and empty lists in the trace).
  std::string json() const;

  static RouterRecorder* active();
  static void set_active(RouterRecorder* r);

 private:
  int64_t n_layer_, n_expert_, k_;
  bool trace_;
  std::vector<std::vector<int64_t>> counts_;  // [layer][expert]
  std::vector<std::vector<int32_t>> ids_;     // [layer] -> selected ids, token after token
};

}  // namespace ts
