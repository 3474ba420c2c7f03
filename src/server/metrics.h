// /metrics in Prometheus' text format: requests by endpoint and status, tokens, throughput, queue,
// sequences, KV cache use, and (when the model's expert store reports one) the expert cache hit
// rate. The scheduler's counters are read as they are; this adds the per-request counts.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "server/scheduler.h"

namespace ts::server {

class Metrics {
 public:
  void count_request(const std::string& endpoint, int status);
  // Extra gauges, e.g. an expert store's cache hit rate: called at each scrape; nullopt = not known yet.
  std::function<std::optional<double>()> expert_cache_hit_rate;

  std::string render(const SchedulerStats& s, int64_t n_ctx, int64_t open_connections) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
};

}  // namespace ts::server
