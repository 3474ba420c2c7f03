// `turbospark router-replay TRACE.json`: the hit rate of a streamed expert cache of each given size
// and policy over a recorded routing (--router-hist FILE --router-trace), by replaying the planner
// (residency/planner_replay.h). Prints JSON: {"slots":[...],"lfu":[rates],"lru":[rates],...}.
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "residency/planner_replay.h"
#include "util/error.h"

namespace ts::cli {
namespace {

struct ReplayArgs {
  std::string trace;
  std::vector<int32_t> slots;
  std::vector<std::string> policies = {"lfu", "lru"};
};

void run(const ReplayArgs& a) {
  std::ifstream in(a.trace, std::ios::binary);
  if (!in) fail("cannot open '{}'", a.trace);
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<std::vector<std::vector<int32_t>>> trace;
  int32_t n_expert = 0, k = 0;
  try {
    const nlohmann::json j = nlohmann::json::parse(ss.str());
    n_expert = j.at("num_experts").get<int32_t>();
    k = j.at("top_k").get<int32_t>();
    if (!j.contains("trace")) fail("'{}' has no \"trace\": record it with --router-hist FILE --router-trace", a.trace);
    trace = j.at("trace").get<std::vector<std::vector<std::vector<int32_t>>>>();
  } catch (const nlohmann::json::exception& e) {
    fail("'{}' is not a router histogram: {}", a.trace, e.what());
  }
  if (n_expert < 1) fail("'{}': num_experts is {}", a.trace, n_expert);
  for (const auto& tok : trace)
    for (const auto& ids : tok)
      for (int32_t e : ids)
        if (e < 0 || e >= n_expert) fail("'{}': expert id {} is out of range (num_experts {})", a.trace, e, n_expert);
  std::vector<int32_t> slots = a.slots;
  if (slots.empty())
    for (int32_t s = 1; s <= n_expert; s *= 2) slots.push_back(s);
  nlohmann::json out;
  out["tokens"] = trace.size();
  out["num_experts"] = n_expert;
  out["top_k"] = k;
  out["slots"] = slots;
  for (const std::string& pol : a.policies) {
    std::vector<double> rates;
    for (int32_t s : slots)
      rates.push_back(replay_trace(trace, n_expert, s, pol == "lru" ? EvictionPolicy::LRU : EvictionPolicy::LFU).hit_rate());
    out[pol] = rates;
  }
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace

void add_router_replay_command(CLI::App& app) {
  auto a = std::make_shared<ReplayArgs>();
  auto* sub = app.add_subcommand("router-replay", "hit rate of a streamed expert cache per size and policy, replayed over a router trace");
  sub->add_option("trace", a->trace, "JSON from --router-hist FILE --router-trace")->required();
  sub->add_option("--slots", a->slots, "cache slots per layer (default: 1, 2, 4, ... up to every expert)")
      ->delimiter(',')->check(CLI::Range(1, 1 << 20));
  sub->add_option("--policy", a->policies, "policies to replay")->delimiter(',')->check(CLI::IsMember({"lfu", "lru"}));
  sub->callback([a] { run(*a); });
}

}  // namespace ts::cli
