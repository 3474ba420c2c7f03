#include "moe/router_recorder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>

namespace ts {
namespace {
std::atomic<RouterRecorder*> g_active{nullptr};
}

RouterRecorder::RouterRecorder(int64_t n_layer, int64_t n_expert, int64_t top_k, bool trace)
    : n_layer_(n_layer), n_expert_(n_expert), k_(top_k), trace_(trace),
      counts_(n_layer, std::vector<int64_t>(n_expert, 0)), ids_(n_layer) {}

void RouterRecorder::record(int64_t layer, const Routing& r) {
  for (int32_t e : r.experts) ++counts_[layer][e];
  if (trace_) ids_[layer].insert(ids_[layer].end(), r.experts.begin(), r.experts.end());
}

std::string RouterRecorder::json() const {
  nlohmann::json j;
  j["num_layers"] = n_layer_;
  j["num_experts"] = n_expert_;
  j["top_k"] = k_;
  int64_t tokens = 0;
  for (const auto& row : counts_) {
    int64_t sum = 0;
    for (int64_t c : row) sum += c;
    tokens = std::max(tokens, sum / std::max<int64_t>(k_, 1));
  }
  j["tokens"] = tokens;
  j["counts"] = counts_;
  if (trace_) {
    nlohmann::json t = nlohmann::json::array();
    for (int64_t tok = 0; tok < tokens; ++tok) {
      nlohmann::json per_layer = nlohmann::json::array();
      for (int64_t l = 0; l < n_layer_; ++l) {
        const auto& v = ids_[l];
        const size_t at = static_cast<size_t>(tok * k_);
        per_layer.push_back(at + k_ <= v.size() ? std::vector<int32_t>(v.begin() + at, v.begin() + at + k_) : std::vector<int32_t>{});
      }
      t.push_back(std::move(per_layer));
    }
    j["trace"] = std::move(t);
  }
  return j.dump();
}

RouterRecorder* RouterRecorder::active() { return g_active.load(std::memory_order_relaxed); }
void RouterRecorder::set_active(RouterRecorder* r) { g_active.store(r, std::memory_order_relaxed); }

}  // namespace ts
