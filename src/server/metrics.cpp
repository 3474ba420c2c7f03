#include "server/metrics.h"

#include <fmt/format.h>

namespace ts::server {
namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help, type, value);
}

}  // namespace

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
}

std::string Metrics::render(const SchedulerStats& s, int64_t n_ctx, int64_t open_connections) const {
  std::string out = "# HELP turbospark_requests_total HTTP requests by endpoint and status.\n# TYPE turbospark_requests_total counter\n";
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, n] : requests_)
      out += fmt::format("turbospark_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
  }
  const double busy = s.busy_seconds.load();
  metric(out, "turbospark_prompt_tokens_total", "counter", "Prompt tokens prefilled (not counting reused ones).", static_cast<double>(s.prompt_tokens));
  metric(out, "turbospark_prompt_tokens_cached_total", "counter", "Prompt tokens reused from a cached prefix.", static_cast<double>(s.cached_tokens));
  metric(out, "turbospark_generated_tokens_total", "counter", "Tokens generated.", static_cast<double>(s.generated_tokens));
  metric(out, "turbospark_generated_tokens_per_second", "gauge", "Tokens generated per second of engine busy time.",
         busy > 0 ? static_cast<double>(s.generated_tokens) / busy : 0.0);
  metric(out, "turbospark_engine_busy_seconds_total", "counter", "Time the engine spent in forward calls and sampling.", busy);
  metric(out, "turbospark_forward_steps_total", "counter", "Forward calls (each batches every running sequence).", static_cast<double>(s.steps));
  metric(out, "turbospark_requests_cancelled_total", "counter", "Requests ended early (client gone or stop found).", static_cast<double>(s.cancelled));
  metric(out, "turbospark_queue_depth", "gauge", "Requests waiting for a sequence slot.", static_cast<double>(s.queued));
  metric(out, "turbospark_active_sequences", "gauge", "Sequences generating.", static_cast<double>(s.active));
  metric(out, "turbospark_cached_sequences", "gauge", "Finished sequences whose KV cache is kept for prefix reuse.", static_cast<double>(s.idle_cached));
  metric(out, "turbospark_kv_cache_bytes", "gauge", "Bytes held by KV caches.", static_cast<double>(s.kv_bytes));
  metric(out, "turbospark_kv_cache_used_positions", "gauge", "Filled positions over all KV caches.", static_cast<double>(s.kv_positions));
  metric(out, "turbospark_kv_cache_positions_per_sequence", "gauge", "Context positions of one sequence.", static_cast<double>(n_ctx));
  metric(out, "turbospark_open_connections", "gauge", "Open HTTP connections.", static_cast<double>(open_connections));
  if (expert_cache_hit_rate)
    if (const std::optional<double> r = expert_cache_hit_rate())
      metric(out, "turbospark_expert_cache_hit_ratio", "gauge", "Routed-expert lookups served from the expert cache.", *r);
  return out;
}

}  // namespace ts::server
