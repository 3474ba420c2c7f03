// The CUDA backend on every model fixture: both paths (batched prefill, and one token at a time,
// whose steps from the third on replay a recorded CUDA graph) within the fixtures' pass rule of the
// exact reference, and the same bytes from two runs; on the MoE fixtures, experts streamed through
// device slots give the resident bytes for every cache size. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>

#include "cuda/require_cuda.h"
#include "model/parity_util.h"
#include "moe/moe_test_util.h"

namespace ts {
namespace {

using test::Fixture;

enum class Path { Prefill, Sequential };

std::vector<std::string> flags(Path p) {
  std::vector<std::string> f{"--device", "cuda"};
  if (p == Path::Sequential) f.push_back("--sequential");
  return f;
}

class CudaParity : public testing::TestWithParam<std::tuple<Fixture, Path>> {};

TEST_P(CudaParity, WithinThePassRuleOfTheReference) {
  TS_REQUIRE_CUDA();
  const auto& [f, path] = GetParam();
  test::ScratchDir dir;
  const std::vector<float> ref = test::read_floats(f.ref());
  // A fixture without llama.cpp's figures is judged as if llama.cpp were exact: the rule's floors
  // (kl <= 1e-5, top-1 >= 0.95; rel <= 1e-3 for F32/F16 weights).
  const test::Distance llama = f.has_llamacpp() ? test::distance(ref, test::read_floats(f.llamacpp())) : test::Distance{0, 1, 0, 0};
  const std::vector<float> first = test::cli_logits(f, flags(path), dir);
  const test::Distance ours = test::distance(ref, first);
  const bool ok = test::passes(f, ours, llama);
  const std::string vs = f.has_llamacpp() ? " | llama.cpp " + test::describe(llama) : " | (no llama.cpp figures: the rule's floors)";
  std::printf("%s cuda %-20s %-10s %s%s\n", ok ? "ok  " : "FAIL", f.name.c_str(), path == Path::Prefill ? "prefill" : "sequential",
              test::describe(ours).c_str(), vs.c_str());
  EXPECT_TRUE(ok) << f.name << ": " << test::describe(ours) << vs;
  // No atomics in any reduction whose order can vary: a second run gives the same bytes.
  EXPECT_TRUE(test::same_bytes(first, test::cli_logits(f, flags(path), dir))) << "two CUDA runs differ";
}

// Streamed: a cache of 1 slot per layer runs every layer in waves of one expert (with prefetch, a
// predicted expert can take the slot first); 3 slots, a few waves; every expert, none; and 3 slots
// fed from the files rather than a pinned copy. All must be the resident bytes: the routing, products and rank-ordered sum do not depend on where the
// weights are.
class CudaStreamed : public testing::TestWithParam<std::tuple<Fixture, Path>> {};

TEST_P(CudaStreamed, GivesTheResidentBytesForEveryCacheSize) {
  TS_REQUIRE_CUDA();
  const auto& [f, path] = GetParam();
  test::ScratchDir dir;
  const std::vector<float> resident = test::cli_logits(f, flags(path), dir);
  for (const char* slots : {"1", "3", "1000"})
    for (const char* prefetch : {"off", "on"}) {
      std::vector<std::string> fl = flags(path);
      for (const char* a : {"--expert-residency", "streamed", "--expert-cache-slots", slots, "--expert-prefetch", prefetch}) fl.push_back(a);
      EXPECT_TRUE(test::same_bytes(resident, test::cli_logits(f, fl, dir)))
          << f.name << ": streamed with " << slots << " slots per layer, prefetch " << prefetch << " differs from resident";
    }
  // A router histogram needs the choices on the host: the device routes and hands them back, and the
  // bytes stay the resident ones.
  {
    std::vector<std::string> fl = flags(path);
    const std::string hist = dir.file("hist.json");
    for (const std::string& a : {std::string("--router-hist"), hist}) fl.push_back(a);
    EXPECT_TRUE(test::same_bytes(resident, test::cli_logits(f, fl, dir))) << f.name << ": with --router-hist differs";
    EXPECT_TRUE(std::filesystem::file_size(hist) > 0) << "no histogram written";
  }
  // A host budget too small for a pinned copy of every expert: the slots are fed from the files.
  std::vector<std::string> fl = flags(path);
  for (const char* a : {"--expert-residency", "streamed", "--expert-cache-slots", "3", "--memory-budget-mb", "1"}) fl.push_back(a);
  EXPECT_TRUE(test::same_bytes(resident, test::cli_logits(f, fl, dir))) << f.name << ": streamed from the files differs";
}

INSTANTIATE_TEST_SUITE_P(Models, CudaStreamed,
                         testing::Combine(testing::ValuesIn(test::moe_fixtures()), testing::Values(Path::Prefill, Path::Sequential)),
                         [](const testing::TestParamInfo<CudaStreamed::ParamType>& p) {
                           return test::test_name(std::get<0>(p.param).name) +
                                  (std::get<1>(p.param) == Path::Prefill ? "_prefill" : "_sequential");
                         });

INSTANTIATE_TEST_SUITE_P(Models, CudaParity,
                         testing::Combine(testing::ValuesIn(test::model_fixtures()), testing::Values(Path::Prefill, Path::Sequential)),
                         [](const testing::TestParamInfo<CudaParity::ParamType>& p) {
                           return test::test_name(std::get<0>(p.param).name) +
                                  (std::get<1>(p.param) == Path::Prefill ? "_prefill" : "_sequential");
                         });

}  // namespace
}  // namespace ts
