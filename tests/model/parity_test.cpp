// `turbospark logits` against every model fixture in tests/data/models: distance from the exact
// float64 reference on both paths (batched prefill and one token at a time), held to the bound the
// exact path really meets (and to the shared pass rule relative to llama.cpp), and the determinism
// contracts: the bytes do not depend on the path, the thread count, the prefill chunk size, or on
// the run.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "cli/cli_harness.h"
#include "model/parity_util.h"
#include "runtime/token_file.h"
#include "support/gguf_edit.h"

namespace ts {
namespace {

using test::Fixture;

// Runs `turbospark logits` on the fixture's tokens with extra flags; throws (failing the test, with
// the CLI's message) unless it exits 0.
std::vector<float> cli_logits(const Fixture& f, const std::vector<std::string>& flags, const test::ScratchDir& dir) {
  static int n_calls = 0;
  const std::string out = dir.file(fmt::format("logits{}.f32", n_calls++));
  std::vector<std::string> args{"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", out};
  args.insert(args.end(), flags.begin(), flags.end());
  const test::CliRun r = test::run_cli(args);
  if (!r.exited || r.code != 0)
    throw std::runtime_error(fmt::format("turbospark logits {} failed ({}): {}", fmt::join(flags, " "),
                                         r.exited ? "exit " + std::to_string(r.code) : "killed by a signal", r.err));
  return test::read_floats(out);
}

std::string first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return fmt::format("{} vs {} values", a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return fmt::format("token {} logit {}: {:.9g} vs {:.9g}", i / test::kFixtureVocab, i % test::kFixtureVocab, a[i], b[i]);
  return "none";
}

#define EXPECT_SAME_BYTES(a, b) EXPECT_TRUE(test::same_bytes(a, b)) << "first difference: " << first_difference(a, b)

std::string fixture_name(const testing::TestParamInfo<Fixture>& p) { return test::test_name(p.param.name); }

// Every model comes with its token ids and its reference logits of [n_tokens][vocab] floats (and
// llama.cpp's, when it has them, of the same shape), so no fixture is silently left out of the
// parameterised tests below.
TEST(Fixtures, EveryModelHasTokensAndLogitsFiles) {
  const std::vector<Fixture> all = test::model_fixtures();
  ASSERT_FALSE(all.empty()) << "no *.gguf in " << test::models_dir();
  for (const Fixture& f : all) {
    SCOPED_TRACE(f.name);
    const size_t want = read_token_file(f.tokens()).size() * test::kFixtureVocab;
    EXPECT_EQ(test::read_floats(f.ref()).size(), want);
    if (f.has_llamacpp()) {
      EXPECT_EQ(test::read_floats(f.llamacpp()).size(), want);
    }
  }
  // gemma3 (local and global layers, in f32 and quantized) and the RoPE variants (linear scaling,
  // rope_freqs) must be among the fixtures (tests/data/models/make_more_fixtures.py writes them).
  for (const char* name : {"gemma3-f32", "gemma3-q8_0", "gemma3-linear-q8_0", "llama-linear-q8_0", "llama-ropefreqs-q8_0"})
    EXPECT_TRUE(std::any_of(all.begin(), all.end(), [&](const Fixture& f) { return f.name == name; })) << name;
}

enum class Path { Prefill, Sequential };

class Parity : public testing::TestWithParam<std::tuple<Fixture, Path>> {};

// The exact path (--precision exact) within the exact bound on every fixture (parity_util.h says why
// it is this tight), and, where llama.cpp's logits exist, the shared rule relative to llama.cpp too.
// The default path is judged in precision_test.cpp.
TEST_P(Parity, WithinTheExactBoundOfTheReference) {
  const auto& [f, path] = GetParam();
  test::ScratchDir dir;
  const std::vector<float> ref = test::read_floats(f.ref());
  std::vector<std::string> flags{"--precision", "exact"};
  if (path == Path::Sequential) flags.push_back("--sequential");
  const test::Distance ours = test::distance(ref, cli_logits(f, flags, dir));
  const bool exact = test::passes_exact(ours);
  std::string vs_llama;
  bool shared = true;
  if (f.has_llamacpp()) {
    const test::Distance llama = test::distance(ref, test::read_floats(f.llamacpp()));
    shared = test::passes(f, ours, llama);
    vs_llama = " | llama.cpp " + test::describe(llama);
  }
  // The per-fixture figures, in the CI log whether or not the case passes.
  std::printf("%s %-20s %-10s %s%s\n", exact && shared ? "ok  " : "FAIL", f.name.c_str(),
              path == Path::Prefill ? "prefill" : "sequential", test::describe(ours).c_str(), vs_llama.c_str());
  EXPECT_TRUE(exact) << f.name << ": " << test::describe(ours) << " (exact bound: rel <= " << test::kExactRelL2
                     << ", mean kl <= " << test::kExactMeanKl << ")";
  EXPECT_TRUE(shared) << f.name << ": " << test::describe(ours) << vs_llama
                      << (f.unquantized() ? " (rule: rel <= 1e-3)" : " (rule: kl <= max(1.5 x llama.cpp's, 1e-5), top1 >= llama.cpp's - 0.05)");
}

INSTANTIATE_TEST_SUITE_P(Models, Parity, testing::Combine(testing::ValuesIn(test::model_fixtures()), testing::Values(Path::Prefill, Path::Sequential)),
                         [](const testing::TestParamInfo<Parity::ParamType>& p) {
                           return test::test_name(std::get<0>(p.param).name) +
                                  (std::get<1>(p.param) == Path::Prefill ? "_prefill" : "_sequential");
                         });

class Determinism : public testing::TestWithParam<Fixture> {
 protected:
  test::ScratchDir dir_;
};

// The kernels guarantee matmul == matvec bitwise, so the batched path must equal the decode path.
TEST_P(Determinism, PrefillEqualsSequential) {
  EXPECT_SAME_BYTES(cli_logits(GetParam(), {}, dir_), cli_logits(GetParam(), {"--sequential"}, dir_));
}

// Each output element is computed by one thread in a fixed order, whatever the thread count
// (3 also splits rows unevenly).
TEST_P(Determinism, ThreadCountDoesNotChangeBytes) {
  const std::vector<float> one = cli_logits(GetParam(), {"-t", "1"}, dir_);
  EXPECT_SAME_BYTES(one, cli_logits(GetParam(), {"-t", "2"}, dir_));
  EXPECT_SAME_BYTES(one, cli_logits(GetParam(), {"-t", "3"}, dir_));
}

TEST_P(Determinism, RepeatedRunsAreIdentical) {
  EXPECT_SAME_BYTES(cli_logits(GetParam(), {"-t", "2"}, dir_), cli_logits(GetParam(), {"-t", "2"}, dir_));
}

// 40 tokens in chunks of 7 (six chunks, the last one short) continue the KV cache across calls.
TEST_P(Determinism, ChunkedPrefillEqualsOneChunk) {
  EXPECT_SAME_BYTES(cli_logits(GetParam(), {"--batch", "7"}, dir_), cli_logits(GetParam(), {"--batch", "256"}, dir_));
}

// Why the exact bound: small semantic errors pass the shared rule but not the exact bound. The model
// is edited, the reference is not, as if the engine had read the wrong value.
TEST(ParityRules, ExactBoundCatchesWhatTheSharedRuleMisses) {
  const Fixture f{"llama-dense-f32", test::models_dir()};
  const std::vector<float> ref = test::read_floats(f.ref());
  const test::Distance llama = test::distance(ref, test::read_floats(f.llamacpp()));
  test::ScratchDir dir;
  struct Edit {
    const char* what;
    const char* key;
    float value;
  };
  for (const Edit& e : {Edit{"RMS epsilon 1e-6 for 1e-5", "llama.attention.layer_norm_rms_epsilon", 1e-6f},
                        Edit{"RoPE base 12000 for 10000", "llama.rope.freq_base", 12000.0f}}) {
    SCOPED_TRACE(e.what);
    test::GgufContents c = test::read_gguf(f.gguf());
    c.set(e.key, test::f32_value(e.value));
    const Fixture edited{"edited", dir.path()};
    test::write_gguf(c, edited.gguf());
    std::filesystem::copy_file(f.tokens(), edited.tokens(), std::filesystem::copy_options::overwrite_existing);
    const test::Distance d = test::distance(ref, cli_logits(edited, {}, dir));
    std::printf("%-28s %s (shared rule: %s)\n", e.what, test::describe(d).c_str(), test::passes(f, d, llama) ? "pass" : "fail");
    EXPECT_FALSE(test::passes_exact(d)) << test::describe(d);
  }
}

// Older converters wrote linear scaling as rope.scale_linear, without rope.scaling.*: same math.
TEST(ParityRules, OldLinearScalingKeyMeansTheSame) {
  const Fixture f{"llama-linear-q8_0", test::models_dir()};
  test::ScratchDir dir;
  test::GgufContents c = test::read_gguf(f.gguf());
  c.erase("llama.rope.scaling.type");
  c.erase("llama.rope.scaling.factor");
  c.set("llama.rope.scale_linear", test::f32_value(4.0f));
  const Fixture old{"old-key", dir.path()};
  test::write_gguf(c, old.gguf());
  std::filesystem::copy_file(f.tokens(), old.tokens());
  EXPECT_SAME_BYTES(cli_logits(old, {}, dir), cli_logits(f, {}, dir));
}

INSTANTIATE_TEST_SUITE_P(Models, Determinism, testing::ValuesIn(test::model_fixtures()), fixture_name);

}  // namespace
}  // namespace ts
