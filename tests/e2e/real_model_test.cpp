// End-to-end checks on the real PyPI models (SmolLM2-135M-Instruct, the default; Gemma-3-270M base),
// teacher-forced on llama.cpp's greedy continuations (tests/data/real/*.json) and judged as
// distributions, not as free-running text (where one near-tie that flips sends a continuation
// elsewhere and says nothing about the logits):
//  - distance from the exact float64 reference (tests/data/real/*.ref-top.bin, made with
//    ../shared/tools/np_reference.py and compact_reference.py): mean KL and top-1 agreement;
//  - agreement of our argmax with llama.cpp's greedy token at each teacher-forced position.
// The CPU's exact path is held at the reference's distance; the CUDA backend (which skips without a
// device) on both of its paths at its own, far below llama.cpp's.
// The models come from the cache (`turbospark fetch`, see support/real_models.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "cuda/require_cuda.h"
#include "model/forward.h"
#include "support/real_models.h"

namespace ts {
namespace {

struct RealCase {
  std::string prompt;
  std::vector<int32_t> prompt_ids, greedy_ids;
};

// One row of the compact reference: the top-K logits and the log-sum-exp of the others.
struct RefRow {
  int32_t case_index = 0, row = 0;
  double lse_rest = 0;
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

struct RealModel {
  std::string path;
  std::vector<RealCase> cases;
  std::vector<RefRow> ref;
};

RealModel load_real(const std::string& stem) {
  const std::string dir = std::string(TS_TEST_DATA) + "/real/";
  std::ifstream in(dir + stem + ".json");
  const auto j = nlohmann::json::parse(in);
  RealModel m;
  m.path = cached_model_path(j["model"].get<std::string>());
  for (const auto& c : j["cases"])
    m.cases.push_back({c["prompt"], c["prompt_ids"].get<std::vector<int32_t>>(), c["greedy_ids"].get<std::vector<int32_t>>()});
  std::ifstream bin(dir + stem + ".ref-top.bin", std::ios::binary);
  int32_t k = 0, n = 0;
  bin.read(reinterpret_cast<char*>(&k), 4).read(reinterpret_cast<char*>(&n), 4);
  for (int32_t i = 0; i < n && bin; ++i) {
    RefRow r;
    r.ids.resize(k);
    r.logits.resize(k);
    bin.read(reinterpret_cast<char*>(&r.case_index), 4).read(reinterpret_cast<char*>(&r.row), 4);
    bin.read(reinterpret_cast<char*>(&r.lse_rest), 8);
    bin.read(reinterpret_cast<char*>(r.ids.data()), 4 * k).read(reinterpret_cast<char*>(r.logits.data()), 4 * k);
    m.ref.push_back(std::move(r));
  }
  if (!bin || m.ref.empty()) throw std::runtime_error("cannot read the reference of " + stem);
  return m;
}

double log_sum_exp(const std::vector<double>& v) {
  const double mx = *std::max_element(v.begin(), v.end());
  double s = 0;
  for (double x : v) s += std::exp(x - mx);
  return mx + std::log(s);
}

// KL(reference || ours) over the reference's top-K tokens plus one bin for all the others: both
// sides normalised over the same K + 1 bins, so the result is a true KL (a lower bound of the full
// one) and second-order in the logit error.
double binned_kl(const RefRow& ref, const float* ours, int64_t vocab) {
  std::vector<double> p(ref.logits.begin(), ref.logits.end());
  p.push_back(ref.lse_rest);
  std::vector<double> all(ours, ours + vocab);
  std::vector<double> q;
  for (int32_t id : ref.ids) q.push_back(all[id]);
  for (int32_t id : ref.ids) all[id] = -INFINITY;
  q.push_back(log_sum_exp(all));
  const double lp = log_sum_exp(p), lq = log_sum_exp(q);
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) kl += std::exp(p[i] - lp) * ((p[i] - lp) - (q[i] - lq));
  return kl;
}

struct Measures {
  double mean_kl = 0;
  double top1_ref = 0;       // our argmax == the reference's argmax
  double top1_llamacpp = 0;  // our argmax == llama.cpp's greedy token
  size_t rows = 0;
};

// The distances of every case's logits on `be`, its positions fed in one batched call (prefill) or
// one token per call (`sequential`, the decode path).
Measures measure(const RealModel& rm, Backend& be, bool sequential) {
  auto model = Model::load(rm.path, be);
  const int64_t V = model->hp().n_vocab;
  std::vector<std::vector<float>> logits;
  for (const RealCase& c : rm.cases) {
    std::vector<int32_t> ids = c.prompt_ids;
    ids.insert(ids.end(), c.greedy_ids.begin(), c.greedy_ids.end() - 1);
    const auto n = static_cast<int64_t>(ids.size());
    KvCache kv(be, model->hp(), n);
    Forward fwd(*model, be, ForwardOptions{.max_batch = sequential ? 1 : n});
    logits.emplace_back(static_cast<size_t>(n * V));
    const int64_t step = sequential ? 1 : n;
    for (int64_t i = 0; i < n; i += step) fwd.run(kv, ids.data() + i, step, true, logits.back().data() + i * V);
  }
  Measures m;
  for (const RefRow& r : rm.ref) {
    const RealCase& c = rm.cases.at(r.case_index);
    const float* row = logits.at(r.case_index).data() + static_cast<size_t>(r.row) * V;
    const int32_t best = static_cast<int32_t>(std::max_element(row, row + V) - row);
    const size_t step = static_cast<size_t>(r.row) - (c.prompt_ids.size() - 1);
    m.mean_kl += binned_kl(r, row, V);
    m.top1_ref += best == r.ids[0];
    m.top1_llamacpp += best == c.greedy_ids.at(step);
    ++m.rows;
  }
  m.mean_kl /= m.rows;
  m.top1_ref /= m.rows;
  m.top1_llamacpp /= m.rows;
  return m;
}

class RealModelTest : public ::testing::TestWithParam<const char*> {};

// The exact path (--precision exact); the CPU's default path is held next to it in
// tests/model/real_fidelity_test.cpp. Margins, from measurements (8 prompts x 24 positions per
// model): the exact path lands at mean KL 2.9e-12 (SmolLM2) and 2.2e-12 (Gemma) from the float64
// reference. The bound 1e-9 leaves a factor
// of 350 for summation-order changes, while semantic errors land far above it: RMS epsilon 1e-6
// instead of 1e-5 gives 1.9e-7 on SmolLM2 (with top-1 still 100%), 1e-5 instead of 1e-6 gives 7.9e-3
// on Gemma, a RoPE base 20% off gives 3.4e-4 and 5.4e-5. Top-1 agreement with the reference is exact
// today (1.000): >= 0.99 leaves room for one or two near-ties. llama.cpp computes with f16 K/V and
// int8 activations, which flips its choice at near-ties: we match its greedy tokens at 0.979 and
// 0.953 of the positions, judged at >= 0.90.
TEST_P(RealModelTest, TeacherForcedDistributionsMatchTheExactReference) {
  const RealModel rm = load_real(GetParam());
  TS_REQUIRE_REAL_MODEL(rm.path);
  const Measures m = measure(rm, *make_cpu_backend(2, Precision::Exact), false);
  std::printf("%s: %zu positions, mean KL %.3e, top-1 vs reference %.3f, vs llama.cpp greedy %.3f\n", GetParam(), m.rows,
              m.mean_kl, m.top1_ref, m.top1_llamacpp);
  EXPECT_LE(m.mean_kl, 1e-9);
  EXPECT_GE(m.top1_ref, 0.99);
  EXPECT_GE(m.top1_llamacpp, 0.90);
}

// --precision int8 with the f16 KV cache (the fastest CPU prefill: 8-bit activation codes per block of
// 32 with float scales in the FFNs, llama.cpp's activation rounding), which
// tests/model/real_fidelity_test.cpp holds well under llama.cpp's distance on SmolLM2. Measured here
// (192 positions each): mean KL 1.04e-3 and top-1 0.964 on SmolLM2, 7.5e-4 and 0.990 on Gemma
// (8-bit codes in every product: 2.7e-3 and 1.6e-3); bounds 1.5e-3 and 1.1e-3, top-1 >= 0.94 and
// 0.97. Prefill and one token at a time give the same bytes (model tests), so one path is measured.
TEST_P(RealModelTest, TheInt8PathStaysNearTheExactReference) {
  const RealModel rm = load_real(GetParam());
  TS_REQUIRE_REAL_MODEL(rm.path);
  const Measures m = measure(rm, *make_cpu_backend(2, Precision::Int8, KvType::F16), false);
  std::printf("%s, --precision int8: %zu positions, mean KL %.3e, top-1 vs reference %.3f, vs llama.cpp greedy %.3f\n",
              GetParam(), m.rows, m.mean_kl, m.top1_ref, m.top1_llamacpp);
  const bool smollm2 = std::string(GetParam()).starts_with("smollm2");
  EXPECT_LE(m.mean_kl, smollm2 ? 1.5e-3 : 1.1e-3);
  EXPECT_GE(m.top1_ref, smollm2 ? 0.94 : 0.97);
}

// The CUDA backend has its own numerics (docs/CUDA.md): decode multiplies 16-bit activations split
// into two bytes on dp4a, prefill rounds activations to halves for the tensor cores, and the KV
// cache holds halves. Measured on an H100 (docs/CUDA.md, "Fidelity on the real models"): mean KL
// 3.6e-6 prefill and 5.0e-7 sequential on SmolLM2, 1.8e-6 and 1.8e-7 on Gemma (top-1 1.000, and
// 0.995 for one near-tie of Gemma's sequential path). The bound leaves a factor of 2.8 over the
// worst; llama.cpp's distance from the exact result is about 4.1e-3 and 5.7e-3 (the CPU speed
// issue). One backend runs every case, a Forward and a cache each: the sequential path's recorded
// steps must not carry over from one case's Forward to the next (they did: Gemma's mean KL 1.02).
TEST_P(RealModelTest, OnCudaBothPathsStayNextToTheExactReference) {
  TS_REQUIRE_CUDA();
  const RealModel rm = load_real(GetParam());
  TS_REQUIRE_REAL_MODEL(rm.path);
  const auto be = make_backend("cuda", 2);
  for (const bool sequential : {false, true}) {
    const char* path = sequential ? "sequential" : "prefill";
    const Measures m = measure(rm, *be, sequential);
    std::printf("%s on cuda, %s: %zu positions, mean KL %.3e, top-1 vs reference %.3f, vs llama.cpp greedy %.3f\n", GetParam(),
                path, m.rows, m.mean_kl, m.top1_ref, m.top1_llamacpp);
    EXPECT_LE(m.mean_kl, 1e-5) << path;
    EXPECT_GE(m.top1_ref, 0.99) << path;
    EXPECT_GE(m.top1_llamacpp, 0.90) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Real, RealModelTest,
                         ::testing::Values("smollm2-135m-instruct-q4_1", "gemma-3-270m-q4_k_m"),
                         [](const auto& info) { return std::string(info.param).substr(0, 5); });

// The default model answers a chat question with the expected fact, through the CLI.
TEST(DefaultModel, AnswersAChatQuestion) {
  const std::string path = cached_model_path(known_model("smollm2-135m-instruct").file);
  TS_REQUIRE_REAL_MODEL(path);
  const test::CliRun r =
      test::run_cli({"run", "-m", path, "--chat", "--temp", "0", "-n", "48", "-t", "2", "-p", "What is the capital of France?"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::printf("reply: %s\n", r.out.c_str());
  EXPECT_NE(r.out.find("Paris"), std::string::npos);
}

}  // namespace
}  // namespace ts
