// The CPU backend's default, 8-bit activation codes in the FFNs (--precision int8: llama.cpp's activation
// rounding, with float scales per block of 32; int16 codes elsewhere), driven through the C++ API. It
// is held to the shared pass rule against llama.cpp (parity_util.h), to absolute bounds on the mean KL
// and the top-1 agreement, and to the same determinism contracts as every precision: the bytes depend
// neither on the thread count nor on prefill vs one token at a time (which run different kernels on
// AVX-512 VNNI: the 8-bit panels and the int16 decode).
//
// Margins of the absolute bounds, from the measured values: the worst mean KL is 2.1e-4
// (gpt-oss-mxfp4, where llama.cpp is at 2.2e-4), the next 1.6e-4 (gemma3-q8_0): bound 4e-4. The
// worst top-1 is 0.950 (three fixtures): bound 0.90, four rows of 40 may flip at near-ties. With
// 8-bit codes in every product the MoE fixtures measured 5.3e-4 (an expert choice flipped): that
// fails both. Wrong scales or block layouts put every row off, far past both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "cli/cli_harness.h"
#include "model/forward.h"
#include "model/parity_util.h"
#include "runtime/token_file.h"

namespace ts {
namespace {

using test::Fixture;

constexpr double kMaxMeanKl = 4e-4, kMinTop1 = 0.90;  // margins: see the top of this file

// Teacher-forces the fixture's tokens in chunks of `batch` and returns every position's logits.
std::vector<float> api_logits(const Fixture& f, int threads, int64_t batch) {
  const std::vector<int32_t> ids = read_token_file(f.tokens());
  auto be = make_cpu_backend(threads, Precision::Int8);
  auto model = Model::load(f.gguf(), *be);
  const int64_t n = static_cast<int64_t>(ids.size()), V = model->hp().n_vocab;
  KvCache kv(*be, model->hp(), n);
  ForwardOptions fo;
  fo.max_batch = batch;
  Forward fwd(*model, *be, fo);
  std::vector<float> logits(static_cast<size_t>(n * V));
  for (int64_t i = 0; i < n; i += batch) fwd.run(kv, ids.data() + i, std::min(batch, n - i), true, logits.data() + i * V);
  return logits;
}

class Int8Activations : public testing::TestWithParam<Fixture> {};

TEST_P(Int8Activations, DeterministicAndWithinTheSharedRule) {
  const Fixture& f = GetParam();
  const std::vector<float> prefill = api_logits(f, 1, 256);
  EXPECT_TRUE(test::same_bytes(prefill, api_logits(f, 2, 256))) << "1 vs 2 threads";
  EXPECT_TRUE(test::same_bytes(prefill, api_logits(f, 2, 1))) << "prefill vs sequential";

  const std::vector<float> ref = test::read_floats(f.ref());
  const test::Distance ours = test::distance(ref, prefill);
  std::string vs_llama;
  bool rule_ok = true;
  if (f.has_llamacpp()) {
    const test::Distance llama = test::distance(ref, test::read_floats(f.llamacpp()));
    rule_ok = test::passes(f, ours, llama);
    vs_llama = " | llama.cpp " + test::describe(llama);
  }
  const bool ok = rule_ok && ours.mean_kl <= kMaxMeanKl && ours.top1 >= kMinTop1;
  std::printf("%s %-20s int8-act   %s%s\n", ok ? "ok  " : "FAIL", f.name.c_str(), test::describe(ours).c_str(), vs_llama.c_str());
  EXPECT_TRUE(rule_ok) << test::describe(ours) << vs_llama << " (the shared rule)";
  EXPECT_LE(ours.mean_kl, kMaxMeanKl) << test::describe(ours);
  EXPECT_GE(ours.top1, kMinTop1) << test::describe(ours);
}

INSTANTIATE_TEST_SUITE_P(Models, Int8Activations, testing::ValuesIn(test::model_fixtures()),
                         [](const testing::TestParamInfo<Fixture>& p) { return test::test_name(p.param.name); });

}  // namespace
}  // namespace ts
