// `turbospark bench`: the measurement loop on a fixture model (every repetition timed, the decode
// weight bytes counted from the model's matrices) and the command's JSON and errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "model/forward.h"
#include "residency/expert_source.h"
#include "runtime/bench.h"
#include "util/error.h"

namespace ts {
namespace {

TEST(Bench, TimesEveryRepetitionOfBothTests) {
  auto be = make_cpu_backend(2);
  auto model = Model::load(test::models_dir() + "/llama-moe-q8_0.gguf", *be);
  BenchConfig c;
  c.n_prompt = 24;
  c.n_gen = 5;
  c.reps = 3;
  c.batch = 16;  // two prefill calls per repetition
  const BenchResult r = run_bench(*model, *be, c);
  ASSERT_EQ(r.pp.samples.size(), 3u);
  ASSERT_EQ(r.tg.samples.size(), 3u);
  for (double v : r.pp.samples) EXPECT_GT(v, 0);
  EXPECT_GT(r.tg.min, 0);
  EXPECT_LE(r.tg.min, r.tg.mean);
  EXPECT_LE(r.tg.mean, r.tg.max);
  // Per decode step: every non-expert matrix, k of the experts of each layer, one embedding row.
  const HParams& h = model->hp();
  uint64_t bytes = model->token_embd().row_stride + model->output().rows * model->output().row_stride, biases = 0;
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const LayerWeights& w = model->layer(l);
    for (const Mat* m : {&w.q, &w.k, &w.v, &w.o, &w.router}) bytes += m->rows * m->row_stride;
    const auto& part = model->expert_source()->layer(l).part;
    bytes += h.n_expert_used * (part[kGate].bytes + part[kUp].bytes + part[kDown].bytes);
    biases += h.n_expert_used * (part[kGateBias].bytes + part[kUpBias].bytes + part[kDownBias].bytes);
  }
  EXPECT_GE(r.decode_bytes, bytes);
  // plus the experts' biases and the norm vectors
  EXPECT_LE(r.decode_bytes, bytes + biases + uint64_t(4) * h.n_embd * (2 * h.n_layer + 1));
  EXPECT_EQ(r.positions, 24);
  c.n_prompt = c.n_gen = 0;
  EXPECT_THROW(run_bench(*model, *be, c), Error);
}

TEST(Bench, TestsAtDepthStartAfterTheDepthsTokens) {
  auto be = make_cpu_backend(2);
  auto model = Model::load(test::models_dir() + "/llama-moe-q8_0.gguf", *be);
  BenchConfig c;
  c.n_prompt = 8;
  c.n_gen = 5;
  c.n_depth = 40;
  c.reps = 2;
  c.batch = 16;
  const BenchResult r = run_bench(*model, *be, c);
  EXPECT_EQ(r.pp.samples.size(), 2u);
  EXPECT_EQ(r.tg.samples.size(), 2u);
  EXPECT_EQ(r.positions, 48);  // every test ran past the 40 positions, none past 40 + 8
  // Three sequences decoded together, each in its own cache after the depth.
  c.n_prompt = 0;
  c.n_gen = 6;
  c.sequences = 3;
  const BenchResult s = run_bench(*model, *be, c);
  EXPECT_EQ(s.tg.samples.size(), 2u);
  EXPECT_GT(s.tg.min, 0);
  EXPECT_EQ(s.positions, 46);
  EXPECT_EQ(s.tg_tokens, 18);
  c.sequences = 0;
  EXPECT_THROW(run_bench(*model, *be, c), Error);
  c.sequences = 1;
  c.n_depth = -1;
  EXPECT_THROW(run_bench(*model, *be, c), Error);
}

TEST(Bench, SpreadIsMeanAndSampleDeviation) {
  const Spread s = spread({2.0, 4.0, 6.0});
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  EXPECT_DOUBLE_EQ(s.sd, 2.0);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 6.0);
}

TEST(BenchCli, PrintsJsonForScriptsAndRejectsEmptyRuns) {
  const std::string model = test::models_dir() + "/gpt-oss-mxfp4.gguf";
  const test::CliRun r = test::run_cli({"bench", "-m", model, "-p", "12", "-n", "0", "-r", "2", "-t", "2", "--json", "--device", "cpu"});
  ASSERT_TRUE(r.exited && r.code == 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["pp"].get<double>(), 0);
  EXPECT_EQ(j["pp_samples"].size(), 2u);
  EXPECT_EQ(j["threads"].get<int>(), 2);
  EXPECT_EQ(j["precision"].get<std::string>(), "int8");  // the CLI's default
  // llama-bench's micro-batch where the backend's prefill batch (256 on the CPU) is smaller.
  EXPECT_EQ(j["batch"].get<int>(), 512);
  const test::CliRun b = test::run_cli({"bench", "-m", model, "-p", "12", "-n", "0", "-r", "1", "--batch", "5", "--json"});
  ASSERT_TRUE(b.exited && b.code == 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(b.out)["batch"].get<int>(), 5);
  EXPECT_FALSE(j.contains("tg"));
  EXPECT_EQ(j["n_depth"].get<int>(), 0);
  // Depth and the residency options reach the run.
  const test::CliRun d = test::run_cli({"bench", "-m", model, "-p", "0", "-n", "3", "-d", "20", "-r", "1", "--json",
                                        "--expert-residency", "streamed", "--expert-cache-slots", "2"});
  ASSERT_TRUE(d.exited && d.code == 0) << d.err;
  const auto jd = nlohmann::json::parse(d.out);
  EXPECT_EQ(jd["n_depth"].get<int>(), 20);
  EXPECT_EQ(jd["residency"].get<std::string>(), "streamed");
  EXPECT_GT(jd["tg"].get<double>(), 0);
  EXPECT_EQ(jd["sequences"].get<int>(), 1);
  EXPECT_TRUE(jd.contains("tg_bandwidth_gbs"));
  // Sequences decoded together: their tokens/s, and no one-sequence bandwidth figure.
  const test::CliRun s = test::run_cli({"bench", "-m", model, "-p", "0", "-n", "3", "-r", "1", "--sequences", "3"});
  ASSERT_TRUE(s.exited && s.code == 0) << s.err;
  EXPECT_NE(s.out.find("| tg3x3 "), std::string::npos) << s.out;
  EXPECT_EQ(s.out.find("decode reads"), std::string::npos) << s.out;
  const test::CliRun bad = test::run_cli({"bench", "-m", model, "-p", "0", "-n", "0"});
  EXPECT_TRUE(bad.exited);
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("nothing to measure"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace ts
