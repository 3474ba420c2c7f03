// --phases (and TURBOSPARK_PHASES=1), --phases-json, --router-hist / --router-trace and
// `turbospark router-replay`: the histogram is consistent with the trace and with top-k x tokens;
// the phases are disjoint buckets that add up to the wall time; and the streamed store's measured
// hit rate on the decode path equals the planner replayed over the same trace (the curve
// scripts/plot_router.py draws is the engine's own).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "gguf/gguf.h"
#include "moe/moe_test_util.h"

namespace ts {
namespace {

using ::testing::HasSubstr;
using test::Fixture;

std::string fixture_name(const testing::TestParamInfo<Fixture>& p) { return test::test_name(p.param.name); }

class Instrumentation : public testing::TestWithParam<Fixture> {
 protected:
  test::CliRun logits(std::vector<std::string> extra) {
    std::vector<std::string> args = {"logits", "-m", GetParam().gguf(), "--tokens", GetParam().tokens(), "-o", dir_.file("o.f32")};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::CliRun r = test::run_cli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return r;
  }
  int64_t n_tokens() { return static_cast<int64_t>(test::read_floats(dir_.file("o.f32")).size()) / 1024; }
  test::ScratchDir dir_;
};

TEST_P(Instrumentation, RouterHistogramMatchesItsTraceAndTopKTimesTokens) {
  logits({"--router-hist", dir_.file("h.json"), "--router-trace"});
  const auto j = nlohmann::json::parse(test::read_text(dir_.file("h.json")));
  const auto g = GgufFile::open(GetParam().gguf());
  const std::string arch = g->get_string("general.architecture");
  const int64_t L = j["num_layers"], X = j["num_experts"], k = j["top_k"], T = n_tokens();
  EXPECT_EQ(L, g->get_int(arch + ".block_count"));
  EXPECT_EQ(X, g->get_int(arch + ".expert_count"));
  EXPECT_EQ(k, g->get_int(arch + ".expert_used_count"));
  EXPECT_EQ(j["tokens"], T);
  ASSERT_EQ(j["trace"].size(), static_cast<size_t>(T));
  std::vector<std::vector<int64_t>> from_trace(L, std::vector<int64_t>(X, 0));
  for (const auto& tok : j["trace"]) {
    ASSERT_EQ(tok.size(), static_cast<size_t>(L));
    for (int64_t l = 0; l < L; ++l) {
      ASSERT_EQ(tok[l].size(), static_cast<size_t>(k));
      for (int64_t e : tok[l]) ++from_trace[l][e];
    }
  }
  for (int64_t l = 0; l < L; ++l) {
    int64_t sum = 0;
    for (int64_t e = 0; e < X; ++e) sum += j["counts"][l][e].get<int64_t>();
    EXPECT_EQ(sum, k * T) << "layer " << l;
    EXPECT_EQ(j["counts"][l].get<std::vector<int64_t>>(), from_trace[l]) << "layer " << l;
  }
  // Without --router-trace there is no trace; the counts are the same.
  logits({"--router-hist", dir_.file("h2.json")});
  const auto j2 = nlohmann::json::parse(test::read_text(dir_.file("h2.json")));
  EXPECT_FALSE(j2.contains("trace"));
  EXPECT_EQ(j2["counts"], j["counts"]);
}

TEST_P(Instrumentation, PhasesAreDisjointBucketsThatAddUpToTheWallTime) {
  const test::CliRun r = logits({"--phases", "--expert-residency", "streamed", "--expert-cache-slots", "1"});
  for (const char* name : {"router", "expert I/O wait", "expert compute", "attention", "other dense compute", "sampling", "other"})
    EXPECT_THAT(r.err, HasSubstr(name));
  EXPECT_THAT(r.err, HasSubstr("hits"));
  EXPECT_THAT(r.err, HasSubstr("MB/token"));
  EXPECT_THAT(r.err, HasSubstr("peak RSS"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"(phases: ([0-9.]+) s wall)")));
  const double wall = std::stod(m[1]);
  double sum = 0;
  const std::regex bucket(R"(\n  [a-zA-Z/ ]+? +([0-9.]+) s +[0-9.]+%)");
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), bucket); it != std::sregex_iterator(); ++it)
    sum += std::stod((*it)[1]);
  EXPECT_NEAR(sum, wall, 0.004) << r.err;  // printed to the millisecond

  // The same figures as JSON, and the environment variable turns the report on.
  logits({"--phases-json", dir_.file("p.json"), "--expert-residency", "streamed", "--expert-cache-slots", "1"});
  const auto j = nlohmann::json::parse(test::read_text(dir_.file("p.json")));
  EXPECT_EQ(j["residency"], "streamed");
  EXPECT_GT(j["expert_reads"].get<int64_t>(), 0);
  EXPECT_GT(j["bytes_per_token"].get<double>(), 0);
  EXPECT_EQ(j["expert_hits"].get<int64_t>() + j["expert_reads"].get<int64_t>(), j["expert_requests"].get<int64_t>());
  ::setenv("TURBOSPARK_PHASES", "1", 1);
  const test::CliRun e = logits({});
  ::unsetenv("TURBOSPARK_PHASES");
  EXPECT_THAT(e.err, HasSubstr("phases:"));
  EXPECT_THAT(logits({}).err, ::testing::Not(HasSubstr("phases:")));
}

TEST_P(Instrumentation, StoreHitRateOnTheDecodePathEqualsThePlannerReplay) {
  const auto g = GgufFile::open(GetParam().gguf());
  const int64_t k = g->get_int(g->get_string("general.architecture") + ".expert_used_count");
  for (const std::string policy : {"lfu", "lru"})
    for (int64_t slots : {int64_t{1}, k, k + 2}) {
      SCOPED_TRACE(policy + " " + std::to_string(slots));
      // Without prefetch: the replay plans demand requests only (a prefetched expert is a hit the
      // replay cannot know of).
      logits({"--sequential", "--expert-residency", "streamed", "--expert-cache-slots", std::to_string(slots), "--expert-policy",
              policy, "--expert-prefetch", "off", "--router-hist", dir_.file("h.json"), "--router-trace", "--phases-json",
              dir_.file("p.json")});
      const auto p = nlohmann::json::parse(test::read_text(dir_.file("p.json")));
      const test::CliRun r = test::run_cli({"router-replay", dir_.file("h.json"), "--slots", std::to_string(slots), "--policy", policy});
      ASSERT_EQ(r.code, 0) << r.err;
      const auto rep = nlohmann::json::parse(r.out);
      EXPECT_DOUBLE_EQ(rep[policy][0].get<double>(), p["hit_rate"].get<double>());
      EXPECT_LT(p["hit_rate"].get<double>(), 1.0);
    }
}

INSTANTIATE_TEST_SUITE_P(Models, Instrumentation, testing::ValuesIn(test::moe_fixtures()), fixture_name);

TEST(RouterReplay, BadInputIsAnError) {
  test::ScratchDir dir;
  test::write_text(dir.file("h.json"), R"({"num_layers":1,"num_experts":4,"top_k":2,"counts":[[0,0,0,0]]})");
  test::CliRun r = test::run_cli({"router-replay", dir.file("h.json")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("--router-trace"));
  test::write_text(dir.file("h.json"), R"({"num_layers":1,"num_experts":4,"top_k":2,"trace":[[[0,7]]]})");
  r = test::run_cli({"router-replay", dir.file("h.json")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("expert id 7"));
  // Two tokens on the same two experts: with two slots the second token hits on both; with one slot
  // it hits on the expert left in the slot (hits are taken first), then misses on the other.
  test::write_text(dir.file("h.json"), R"({"num_layers":1,"num_experts":4,"top_k":2,"trace":[[[0,1]],[[0,1]]]})");
  r = test::run_cli({"router-replay", dir.file("h.json"), "--slots", "1,2", "--policy", "lru"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["lru"][0].get<double>(), 0.25);
  EXPECT_EQ(j["lru"][1].get<double>(), 0.5);
}

}  // namespace
}  // namespace ts
