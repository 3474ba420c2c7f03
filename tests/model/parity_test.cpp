// `turbospark logits` against every model fixture in tests/data/models: distance from the exact
// float64 reference on both paths (batched prefill and one token at a time), judged by the fixtures'
// pass rule relative to llama.cpp, and the determinism contracts: the bytes do not depend on the
// path, the thread count, the prefill chunk size, or on the run.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "cli/cli_harness.h"
#include "model/parity_util.h"
#include "runtime/token_file.h"

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

// Every model comes with its token ids and two logits files of [n_tokens][vocab] floats, so no
// fixture is silently left out of the parameterised tests below.
TEST(Fixtures, EveryModelHasTokensAndBothLogitsFiles) {
  const std::vector<Fixture> all = test::model_fixtures();
  ASSERT_FALSE(all.empty()) << "no *.gguf in " << test::models_dir();
  for (const Fixture& f : all) {
    SCOPED_TRACE(f.name);
    const size_t want = read_token_file(f.tokens()).size() * test::kFixtureVocab;
    EXPECT_EQ(test::read_floats(f.ref()).size(), want);
    EXPECT_EQ(test::read_floats(f.llamacpp()).size(), want);
  }
}

enum class Path { Prefill, Sequential };

class Parity : public testing::TestWithParam<std::tuple<Fixture, Path>> {};

TEST_P(Parity, WithinThePassRuleOfTheReference) {
  const auto& [f, path] = GetParam();
  test::ScratchDir dir;
  const std::vector<float> ref = test::read_floats(f.ref());
  const test::Distance llama = test::distance(ref, test::read_floats(f.llamacpp()));
  const std::vector<std::string> flags = path == Path::Sequential ? std::vector<std::string>{"--sequential"} : std::vector<std::string>{};
  const test::Distance ours = test::distance(ref, cli_logits(f, flags, dir));
  const bool ok = test::passes(f, ours, llama);
  // The per-fixture figures, in the CI log whether or not the case passes.
  std::printf("%s %-20s %-10s %s | llama.cpp %s\n", ok ? "ok  " : "FAIL", f.name.c_str(),
              path == Path::Prefill ? "prefill" : "sequential", test::describe(ours).c_str(), test::describe(llama).c_str());
  EXPECT_TRUE(ok) << f.name << ": " << test::describe(ours) << " vs llama.cpp " << test::describe(llama)
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

INSTANTIATE_TEST_SUITE_P(Models, Determinism, testing::ValuesIn(test::model_fixtures()), fixture_name);

}  // namespace
}  // namespace ts
