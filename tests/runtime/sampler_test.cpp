#include "runtime/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

// A config with every filter and penalty off, so a test switches on only what it checks.
SamplerConfig plain(float temperature = 1.0f) {
  SamplerConfig c;
  c.temperature = temperature;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.seed = 1234;
  return c;
}

// Draws n tokens from the same logits; returns how often each id came up.
std::map<int32_t, int> histogram(Sampler& s, const std::vector<float>& logits, int n) {
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) ++h[s.sample(logits.data())];
  return h;
}

void expect_error(const std::function<void()>& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "expected a ts::Error naming " << what;
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(what));
  }
}

TEST(Sampler, GreedyPicksArgmaxWithTiesToLowestId) {
  Sampler s(plain(0.0f), 5);
  std::vector<float> l{1.0f, 3.0f, -2.0f, 3.0f, 2.5f};
  EXPECT_EQ(s.sample(l.data()), 1);
  std::vector<float> inf{1.0f, INFINITY, 0.0f, INFINITY, 2.0f};
  EXPECT_EQ(s.sample(inf.data()), 1);
}

TEST(Sampler, GreedyAppliesPenaltiesFirst) {
  SamplerConfig c = plain(0.0f);
  c.repeat_penalty = 1.1f;
  Sampler s(c, 2);
  std::vector<float> l{2.0f, 1.9f};
  EXPECT_EQ(s.sample(l.data()), 0);
  s.accept(0);  // 2 / 1.1 = 1.818 < 1.9
  EXPECT_EQ(s.sample(l.data()), 1);
}

TEST(Sampler, RepeatPenaltyMultipliesNegativeLogits) {
  SamplerConfig c = plain(0.0f);
  c.repeat_penalty = 1.1f;
  Sampler s(c, 2);
  std::vector<float> l{-1.0f, -1.05f};
  s.accept(0);  // -1 * 1.1 = -1.1 < -1.05
  EXPECT_EQ(s.sample(l.data()), 1);
}

TEST(Sampler, PresencePenaltyCountsOnce) {
  SamplerConfig c = plain(0.0f);
  c.presence_penalty = 0.15f;
  Sampler s(c, 2);
  std::vector<float> l{1.0f, 0.8f};
  s.accept(0);
  s.accept(0);
  s.accept(0);  // 1 - 0.15 = 0.85 > 0.8, however often 0 occurred
  EXPECT_EQ(s.sample(l.data()), 0);
  SamplerConfig c2 = plain(0.0f);
  c2.presence_penalty = 0.25f;
  Sampler s2(c2, 2);
  s2.accept(0);  // 0.75 < 0.8
  EXPECT_EQ(s2.sample(l.data()), 1);
}

TEST(Sampler, FrequencyPenaltyCountsEachOccurrence) {
  SamplerConfig c = plain(0.0f);
  c.frequency_penalty = 0.15f;
  Sampler s(c, 2);
  std::vector<float> l{1.0f, 0.8f};
  s.accept(0);  // 0.85 > 0.8
  EXPECT_EQ(s.sample(l.data()), 0);
  s.accept(0);  // 0.70 < 0.8
  EXPECT_EQ(s.sample(l.data()), 1);
}

TEST(Sampler, PenaltiesOnlySeeTheLastRepeatLastNTokens) {
  SamplerConfig c = plain(0.0f);
  c.repeat_penalty = 2.0f;
  c.repeat_last_n = 2;
  Sampler s(c, 3);
  std::vector<float> l{1.0f, 0.9f, 0.8f};
  s.accept(0);
  EXPECT_EQ(s.sample(l.data()), 1);  // 0 -> 0.5
  s.accept(1);
  EXPECT_EQ(s.sample(l.data()), 2);  // 0 -> 0.5, 1 -> 0.45
  s.accept(2);
  EXPECT_EQ(s.sample(l.data()), 0);  // window is {1, 2}: 0 is back at 1.0
}

TEST(Sampler, TopKKeepsOnlyTheKBest) {
  SamplerConfig c = plain();
  c.top_k = 2;
  Sampler s(c, 5);
  std::vector<float> l{0.0f, 5.0f, 4.9f, 1.0f, 4.95f};
  auto h = histogram(s, l, 2000);
  EXPECT_EQ(h.size(), 2u);
  EXPECT_GT(h[1], 0);
  EXPECT_GT(h[4], 0);
}

TEST(Sampler, TopKBreaksTiesTowardLowerIds) {
  SamplerConfig c = plain();
  c.top_k = 2;
  Sampler s(c, 4);
  std::vector<float> l{3.0f, 3.0f, 3.0f, 3.0f};
  auto h = histogram(s, l, 1000);
  EXPECT_EQ(h.size(), 2u);
  EXPECT_GT(h[0], 0);
  EXPECT_GT(h[1], 0);
}

// Probabilities 0.5, 0.3, 0.15, 0.05 at ids 2, 0, 3, 1.
std::vector<float> top_p_logits() {
  return {std::log(0.3f), std::log(0.05f), std::log(0.5f), std::log(0.15f)};
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  const std::vector<float> l = top_p_logits();
  // p -> the ids that must survive: cumulative 0.5, 0.8, 0.95, 1.0.
  const std::vector<std::pair<float, std::vector<int32_t>>> cases{
      {0.4f, {2}}, {0.75f, {0, 2}}, {0.85f, {0, 2, 3}}, {0.99f, {0, 1, 2, 3}}};
  for (const auto& [p, ids] : cases) {
    SamplerConfig c = plain();
    c.top_p = p;
    Sampler s(c, 4);
    auto h = histogram(s, l, 4000);
    std::vector<int32_t> got;
    for (const auto& [id, n] : h) got.push_back(id);
    EXPECT_EQ(got, ids) << "top_p " << p;
  }
}

TEST(Sampler, TopPOverALargeFlatVocabularyRanksPastTheFirstChunk) {
  // 2000 equal logits: each token has probability 1/2000, so p = 0.5001 keeps ids 0..1000
  // (ties rank the lower id first), more than the sampler's first ranked chunk of 256.
  SamplerConfig c = plain();
  c.top_p = 0.5001f;
  Sampler s(c, 2000);
  std::vector<float> l(2000, 0.25f);
  auto h = histogram(s, l, 4000);
  EXPECT_LE(h.rbegin()->first, 1000);
  EXPECT_GT(h.size(), 950u);  // ~4 draws per kept token: all but ~2% of them show up
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  SamplerConfig c = plain();
  c.min_p = 0.1f;
  Sampler s(c, 4);
  // Relative to the best: 1, 0.5, 0.09 (dropped), 0.11 (kept).
  std::vector<float> l{2.0f, 2.0f + std::log(0.5f), 2.0f + std::log(0.09f), 2.0f + std::log(0.11f)};
  auto h = histogram(s, l, 5000);
  EXPECT_EQ(h.count(2), 0u);
  EXPECT_GT(h[0], 0);
  EXPECT_GT(h[1], 0);
  EXPECT_GT(h[3], 0);
}

// Chi-square goodness of fit of n draws against softmax(logits / temperature). The bound is the
// 0.999 quantile for the degrees of freedom used here, and the seed is fixed, so the outcome is
// deterministic; a sampler off by a few percent on any token fails it at this sample size.
void expect_matches_softmax(float temperature, double chi2_bound) {
  const std::vector<float> l{0.0f, 1.0f, -1.0f, 0.5f, 2.0f, -INFINITY, -2.0f, 0.3f, 1.5f};
  Sampler s(plain(temperature), static_cast<int32_t>(l.size()));
  const int n = 200000;
  auto h = histogram(s, l, n);
  EXPECT_EQ(h.count(5), 0u) << "-inf token was sampled";
  double z = 0.0;
  for (float x : l) z += std::exp(static_cast<double>(x) / temperature);
  double chi2 = 0.0;
  for (size_t i = 0; i < l.size(); ++i) {
    if (l[i] == -INFINITY) continue;
    const double expected = n * std::exp(static_cast<double>(l[i]) / temperature) / z;
    const double d = h[static_cast<int32_t>(i)] - expected;
    chi2 += d * d / expected;
  }
  EXPECT_LT(chi2, chi2_bound) << "temperature " << temperature;
}

TEST(Sampler, FrequenciesMatchSoftmaxAtTemperatureOne) { expect_matches_softmax(1.0f, 24.32); }  // 7 dof

TEST(Sampler, TemperatureScalesLogits) { expect_matches_softmax(0.5f, 24.32); }

TEST(Sampler, PositiveInfinityDominates) {
  Sampler s(plain(), 4);
  std::vector<float> l{1.0f, INFINITY, 100.0f, INFINITY};
  auto h = histogram(s, l, 1000);
  EXPECT_EQ(h.size(), 2u);
  EXPECT_GT(h[1], 0);
  EXPECT_GT(h[3], 0);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  std::vector<float> l(1000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 3.0);
  SamplerConfig c;  // defaults: every filter on
  c.temperature = 1.5f;
  c.repeat_penalty = 1.1f;
  c.seed = 7;
  auto run = [&](uint64_t seed) {
    c.seed = seed;
    Sampler s(c, 1000);
    std::vector<int32_t> out;
    for (int i = 0; i < 300; ++i) {
      out.push_back(s.sample(l.data()));
      s.accept(out.back());
    }
    return out;
  };
  const auto a = run(7);
  EXPECT_EQ(a, run(7));
  EXPECT_NE(a, run(8));
}

TEST(Sampler, LogitsAreNotModified) {
  SamplerConfig c;
  c.repeat_penalty = 1.3f;
  c.presence_penalty = 0.5f;
  c.frequency_penalty = 0.2f;
  c.top_k = 3;
  Sampler s(c, 6);
  std::vector<float> l{1.0f, -2.0f, 3.0f, -INFINITY, 0.5f, 2.0f};
  const std::vector<float> before = l;
  s.accept(0);
  s.accept(1);
  s.accept(2);
  s.sample(l.data());
  EXPECT_EQ(std::memcmp(l.data(), before.data(), l.size() * sizeof(float)), 0);
  SamplerConfig g = c;
  g.temperature = 0.0f;
  Sampler sg(g, 6);
  sg.accept(2);
  sg.sample(l.data());
  EXPECT_EQ(std::memcmp(l.data(), before.data(), l.size() * sizeof(float)), 0);
}

TEST(Sampler, RejectsBadConfigs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto bad = [](auto edit, const std::string& flag) {
    SamplerConfig c;
    edit(c);
    expect_error([&] { Sampler s(c, 10); }, flag);
  };
  bad([](SamplerConfig& c) { c.temperature = -0.1f; }, "--temp");
  bad([&](SamplerConfig& c) { c.temperature = nan; }, "--temp");
  bad([](SamplerConfig& c) { c.top_k = -1; }, "--top-k");
  bad([](SamplerConfig& c) { c.top_p = 0.0f; }, "--top-p");
  bad([](SamplerConfig& c) { c.top_p = 1.01f; }, "--top-p");
  bad([&](SamplerConfig& c) { c.top_p = nan; }, "--top-p");
  bad([](SamplerConfig& c) { c.min_p = -0.01f; }, "--min-p");
  bad([](SamplerConfig& c) { c.min_p = 1.5f; }, "--min-p");
  bad([&](SamplerConfig& c) { c.min_p = nan; }, "--min-p");
  bad([](SamplerConfig& c) { c.repeat_penalty = 0.0f; }, "--repeat-penalty");
  bad([&](SamplerConfig& c) { c.repeat_penalty = nan; }, "--repeat-penalty");
  bad([](SamplerConfig& c) { c.repeat_last_n = -1; }, "--repeat-last-n");
  bad([&](SamplerConfig& c) { c.presence_penalty = nan; }, "--presence-penalty");
  bad([&](SamplerConfig& c) { c.frequency_penalty = nan; }, "--frequency-penalty");
  expect_error([] { Sampler s(SamplerConfig{}, 0); }, "vocabulary");
}

TEST(Sampler, RejectsNanLogitsAllNegativeInfinityAndBadTokens) {
  Sampler s(SamplerConfig{}, 3);
  std::vector<float> l{1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  expect_error([&] { s.sample(l.data()); }, "NaN");
  Sampler g(plain(0.0f), 3);
  expect_error([&] { g.sample(l.data()); }, "NaN");
  std::vector<float> dead(3, -INFINITY);
  expect_error([&] { s.sample(dead.data()); }, "-inf");
  expect_error([&] { s.accept(3); }, "token id 3");
  expect_error([&] { s.accept(-1); }, "token id -1");
}

}  // namespace
}  // namespace ts
