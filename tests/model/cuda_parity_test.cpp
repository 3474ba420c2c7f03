// The CUDA backend on every model fixture: both paths (batched prefill, and one token at a time,
// whose steps from the third on replay a recorded CUDA graph) within the fixtures' pass rule of the
// exact reference, and the same bytes from two runs; decode steps shared by several sequences give
// each the bytes it gets alone; on the MoE fixtures, experts streamed through device slots give the
// resident bytes for every cache size; and a recorded step never outlives the buffers it was
// recorded with. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>

#include "cuda/require_cuda.h"
#include "model/forward.h"
#include "model/parity_util.h"
#include "moe/moe_test_util.h"
#include "runtime/token_file.h"

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
// fed from the files rather than a pinned copy; misses computed on the host. All must be the resident bytes: the routing, products and rank-ordered sum do not depend on where the
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
  // Misses computed on the host's threads from the pinned copy (MXFP4 experts; by default a quarter
  // of each layer's misses, rounded, with 16 threads or more): none of them, and all of them.
  for (const char* share : {"0", "1"}) {
    std::vector<std::string> fl = flags(path);
    for (const char* a : {"--expert-residency", "streamed", "--expert-cache-slots", "3", "--expert-host-share", share}) fl.push_back(a);
    EXPECT_TRUE(test::same_bytes(resident, test::cli_logits(f, fl, dir)))
        << f.name << ": streamed with a host share of " << share << " differs from resident";
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

// Decode steps are recorded as CUDA graphs, which hold the addresses of the Forward's buffers: a
// Forward must never replay another's steps, whether the other is still there (its steps would
// write into the other's buffers) or gone (into freed memory that may be another's now). Every run
// here must give the bytes of a Forward alone on a fresh backend. Without the Forward in the step
// key, the two side by side fail; the case of a Forward gone is also covered by `release` dropping
// every recording, which this test cannot force (the allocator tends to hand a freed Forward's
// addresses back in the same order, and then the old graph happens to fit).
class CudaGraphs : public testing::Test {
 protected:
  // One token at a time through `forwards` Forwards side by side on `be`, each with a cache of `ctx`
  // positions, their steps interleaved; `spacer` device floats are held meanwhile, which may move
  // these Forwards' buffers away from earlier ones'.
  std::vector<std::vector<float>> sequential(Backend& be, const Model& model, int forwards, int64_t ctx, int64_t spacer) {
    Act hold = be.alloc(1, spacer);
    const int64_t n = static_cast<int64_t>(ids_.size()), V = model.hp().n_vocab;
    std::vector<std::vector<float>> logits(forwards, std::vector<float>(static_cast<size_t>(n * V)));
    {
      std::vector<std::unique_ptr<KvCache>> kv;
      std::vector<std::unique_ptr<Forward>> fwd;
      for (int f = 0; f < forwards; ++f) {
        kv.push_back(std::make_unique<KvCache>(be, model.hp(), ctx));
        fwd.push_back(std::make_unique<Forward>(model, be, ForwardOptions{.max_batch = 1}));
      }
      for (int64_t i = 0; i < n; ++i)
        for (int f = 0; f < forwards; ++f) fwd[f]->run(*kv[f], ids_.data() + i, 1, true, logits[f].data() + i * V);
    }
    be.release(hold);
    return logits;
  }
  const test::Fixture f_{"gpt-oss-mxfp4", test::models_dir()};
  const std::vector<int32_t> ids_ = read_token_file(f_.tokens());
};

TEST_F(CudaGraphs, AForwardNeverReplaysAnothersSteps) {
  TS_REQUIRE_CUDA();
  const int64_t n = static_cast<int64_t>(ids_.size());
  std::vector<float> alone;
  {
    const auto be = make_backend("cuda", 2);
    const auto model = Model::load(f_.gguf(), *be);
    alone = sequential(*be, *model, 1, n, 1)[0];
  }
  const auto be = make_backend("cuda", 2);
  const auto model = Model::load(f_.gguf(), *be);
  // One Forward after another, then two side by side, then one again.
  for (const auto& [forwards, ctx, spacer] : {std::tuple<int, int64_t, int64_t>{1, n, 1}, {1, n + 9, 1 << 20}, {2, 2 * n, 7}, {1, n, 3 << 18}}) {
    const auto runs = sequential(*be, *model, forwards, ctx, spacer);
    for (int f = 0; f < forwards; ++f)
      EXPECT_TRUE(test::same_bytes(alone, runs[f])) << "Forward " << f << " of " << forwards << " with a cache of " << ctx
                                                    << " positions, after " << spacer << " floats held, differs";
  }
}

// Decode steps (every sequence one row: the server's decode steps) take the exact products, whose
// sums, like the attention's splits, are each row's own: a sequence decoded beside others gets the
// bytes it gets alone. Each prompt is prefilled alone in both runs (a step of more rows takes the
// tensor cores, whose bytes depend on the step: docs/CUDA.md). The sequences differ in length, so
// the shared steps hold six rows down to one (more than kMatvecMaxRows: matvecs of up to four rows
// at a time, the experts one (token, rank) pair at a time). Short: prompts of 4-9 tokens;
// long: the fixture's tokens repeated, prompts of 60-100 and contexts past 64 keys, where a row's
// keys fall into several per split. A third run alone tells a difference between runs (state left
// by the one before) from one between shared and alone steps.
enum class Length { Short, Long };

class CudaBatching : public testing::TestWithParam<std::tuple<Fixture, Length>> {};

// The first token position whose logits differ, or -1.
int64_t first_difference(const std::vector<float>& a, const std::vector<float>& b, int64_t V) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<int64_t>(i) / V;
  return -1;
}

TEST_P(CudaBatching, DecodeStepsGiveEachSequenceItsBytesAlone) {
  TS_REQUIRE_CUDA();
  const auto& [f, length] = GetParam();
  const auto be = make_backend("cuda", 2);
  const auto model = Model::load(f.gguf(), *be);
  const int64_t V = model->hp().n_vocab;
  const std::vector<int32_t> all = read_token_file(f.tokens());
  ASSERT_GE(all.size(), 30u);
  auto tokens = [&](size_t from, int times) {
    std::vector<int32_t> t;
    for (int r = 0; r < times; ++r) t.insert(t.end(), all.begin() + static_cast<std::ptrdiff_t>(r == 0 ? from : 0), all.end());
    return t;
  };
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int64_t> prompt;
  if (length == Length::Short) {
    seqs = {all, {all.begin() + 5, all.begin() + 26}, tokens(11, 1), tokens(3, 1), {all.begin() + 8, all.begin() + 24}, tokens(17, 1)};
    prompt = {6, 9, 4, 5, 7, 3};
  } else {
    seqs = {tokens(0, 3), tokens(5, 2), tokens(11, 3), tokens(3, 2), tokens(8, 3), tokens(17, 2)};
    for (const auto& s : seqs) prompt.push_back(static_cast<int64_t>(s.size()) - (&s == &seqs[0] ? 28 : 14));
  }
  const int S = static_cast<int>(seqs.size());
  const int64_t max_batch = length == Length::Short ? 16 : 128;
  auto run = [&](bool shared) {
    std::vector<std::unique_ptr<KvCache>> kv;
    std::vector<std::vector<float>> got(seqs.size());
    Forward fwd(*model, *be, ForwardOptions{.max_batch = max_batch});
    for (int s = 0; s < S; ++s) {
      kv.push_back(std::make_unique<KvCache>(*be, model->hp(), static_cast<int64_t>(seqs[s].size())));
      got[s].resize(seqs[s].size() * V);
      const SeqStep p{kv[s].get(), seqs[s].data(), prompt[s], true, got[s].data()};
      fwd.run(std::span<const SeqStep>(&p, 1));
    }
    std::vector<int64_t> done(prompt);
    auto next = [&](int s) { return SeqStep{kv[s].get(), seqs[s].data() + done[s], 1, true, got[s].data() + done[s] * V}; };
    auto left = [&](int s) { return done[s] < static_cast<int64_t>(seqs[s].size()); };
    if (shared) {
      for (;;) {
        std::vector<SeqStep> step;
        for (int s = 0; s < S; ++s)
          if (left(s)) {
            step.push_back(next(s));
            ++done[s];
          }
        if (step.empty()) break;
        fwd.run(step);
      }
    } else {
      for (int s = 0; s < S; ++s)
        for (; left(s); ++done[s]) {
          const SeqStep one = next(s);
          fwd.run(std::span<const SeqStep>(&one, 1));
        }
    }
    return got;
  };
  const auto alone = run(false), shared = run(true), again = run(false);
  for (int s = 0; s < S; ++s) {
    const int64_t d = first_difference(alone[s], shared[s], V), r = first_difference(alone[s], again[s], V);
    EXPECT_EQ(r, -1) << "sequence " << s << ": a second run alone first differs at position " << r << " (prompt " << prompt[s] << ")";
    EXPECT_EQ(d, -1) << "sequence " << s << ": shared steps first differ from alone at position " << d << " (prompt " << prompt[s]
                     << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaBatching, testing::Combine(testing::ValuesIn(test::model_fixtures()), testing::Values(Length::Short, Length::Long)),
                         [](const testing::TestParamInfo<CudaBatching::ParamType>& p) {
                           return test::test_name(std::get<0>(p.param).name) + (std::get<1>(p.param) == Length::Short ? "_short" : "_long");
                         });

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
