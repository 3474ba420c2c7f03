// route(): the two router contracts on hand-made logits. Each case is built so that the plausible
// wrong implementation (bias added after the top-k, softmax over all experts for gpt-oss, no
// renormalisation for Mixtral/Qwen, ties to the higher index, logits rows read with the wrong
// stride, NaN silently ranked) gives a different answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "moe/router.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Routing route_one(RouterContract c, const std::vector<float>& logits, const std::vector<float>& bias, int64_t k) {
  Routing r;
  route(c, logits.data(), bias.empty() ? nullptr : bias.data(), 1, static_cast<int64_t>(logits.size()), k, 0, r);
  return r;
}

// Softmax of the given values (double), for the expected weights.
std::vector<double> softmax(const std::vector<double>& z) {
  double mx = z[0], sum = 0;
  for (double v : z) mx = std::max(mx, v);
  for (double v : z) sum += std::exp(v - mx);
  std::vector<double> p;
  for (double v : z) p.push_back(std::exp(v - mx) / sum);
  return p;
}

TEST(GptOssRouter, BiasIsAddedBeforeTheTopK) {
  // Raw logits rank 0 and 1 first; the bias lifts 2 and 3 above them (5.0 and 4.1 vs 3.0 and 2.5).
  const Routing r = route_one(RouterContract::BiasedTopKSoftmax, {3.0f, 2.5f, 0.0f, 0.1f}, {0.0f, 0.0f, 5.0f, 4.0f}, 2);
  EXPECT_THAT(r.experts, ElementsAre(2, 3));
}

TEST(GptOssRouter, SoftmaxOverTheSelectedBiasedLogitsOnly) {
  const std::vector<float> logits{1.0f, -0.5f, 2.0f, 0.25f, 0.0f}, bias{0.5f, 0.0f, -1.0f, 0.5f, 0.0f};
  const Routing r = route_one(RouterContract::BiasedTopKSoftmax, logits, bias, 3);
  // Biased: {1.5, -0.5, 1.0, 0.75, 0.0} -> experts 0, 2, 3; weights are the softmax of those three.
  ASSERT_THAT(r.experts, ElementsAre(0, 2, 3));
  const std::vector<double> want = softmax({1.5, 1.0, 0.75});
  for (int rank = 0; rank < 3; ++rank) EXPECT_NEAR(r.weights[rank], want[rank], 1e-6) << "rank " << rank;
  // A softmax over all five experts would leave the selected weights summing to about 0.85.
  EXPECT_NEAR(r.weights[0] + r.weights[1] + r.weights[2], 1.0, 1e-6);
}

TEST(GptOssRouter, SingleExpertGetsWeightOne) {
  const Routing r = route_one(RouterContract::BiasedTopKSoftmax, {0.3f, 0.9f, -2.0f}, {0.0f, 0.0f, 0.0f}, 1);
  EXPECT_THAT(r.experts, ElementsAre(1));
  EXPECT_EQ(r.weights[0], 1.0f);
}

TEST(SoftmaxRouter, SoftmaxOverAllThenRenormalisedOverTheK) {
  const std::vector<float> logits{0.5f, 2.0f, -1.0f, 1.5f, 0.0f, 1.0f};
  const Routing r = route_one(RouterContract::SoftmaxTopKRenorm, logits, {}, 3);
  ASSERT_THAT(r.experts, ElementsAre(1, 3, 5));
  const std::vector<double> p = softmax({0.5, 2.0, -1.0, 1.5, 0.0, 1.0});
  const double kept = p[1] + p[3] + p[5];
  EXPECT_NEAR(r.weights[0], p[1] / kept, 1e-6);
  EXPECT_NEAR(r.weights[1], p[3] / kept, 1e-6);
  EXPECT_NEAR(r.weights[2], p[5] / kept, 1e-6);
  // Without the renormalisation the weights would be the raw probabilities (sum ~0.83).
  EXPECT_NEAR(r.weights[0] + r.weights[1] + r.weights[2], 1.0, 1e-6);
}

TEST(SoftmaxRouter, ExpertsAreListedBestFirst) {
  const Routing r = route_one(RouterContract::SoftmaxTopKRenorm, {0.1f, 0.2f, 3.0f, 0.4f, 2.0f}, {}, 3);
  EXPECT_THAT(r.experts, ElementsAre(2, 4, 3));
  EXPECT_GT(r.weights[0], r.weights[1]);
  EXPECT_GT(r.weights[1], r.weights[2]);
}

TEST(Router, TiesGoToTheLowerExpertIndex) {
  for (RouterContract c : {RouterContract::SoftmaxTopKRenorm, RouterContract::BiasedTopKSoftmax}) {
    SCOPED_TRACE(static_cast<int>(c));
    // Three-way tie for the best, and a tie at the cut-off between experts 0, 2 and 4.
    EXPECT_THAT(route_one(c, {1.0f, 2.0f, 2.0f, 2.0f, 0.0f}, {}, 2).experts, ElementsAre(1, 2));
    EXPECT_THAT(route_one(c, {0.5f, 3.0f, 0.5f, -1.0f, 0.5f}, {}, 3).experts, ElementsAre(1, 0, 2));
  }
  // A tie made by the bias.
  EXPECT_THAT(route_one(RouterContract::BiasedTopKSoftmax, {2.0f, 1.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, 1).experts,
              ElementsAre(0));
}

TEST(Router, EachTokenIsRoutedFromItsOwnRow) {
  // Three tokens of four experts; each row prefers a different pair.
  const std::vector<float> logits{4, 3, 0, 0,  //
                                  0, 0, 3, 4,  //
                                  0, 5, 0, 6};
  for (RouterContract c : {RouterContract::SoftmaxTopKRenorm, RouterContract::BiasedTopKSoftmax}) {
    Routing r;
    route(c, logits.data(), nullptr, 3, 4, 2, 0, r);
    EXPECT_EQ(r.n_tok, 3);
    EXPECT_EQ(r.k, 2);
    EXPECT_THAT(r.experts, ElementsAre(0, 1, 3, 2, 3, 1));
  }
}

TEST(Router, NanLogitsAreAnErrorNamingTheLayer) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The NaN is in the second token, on an expert that would not be selected anyway.
  const std::vector<float> logits{1, 2, 3, 4, nan, 2, 3, 4};
  for (RouterContract c : {RouterContract::SoftmaxTopKRenorm, RouterContract::BiasedTopKSoftmax}) {
    SCOPED_TRACE(static_cast<int>(c));
    Routing r;
    try {
      route(c, logits.data(), nullptr, 2, 4, 2, 7, r);
      ADD_FAILURE() << "no error for NaN router logits";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("layer 7"));
      EXPECT_THAT(e.what(), HasSubstr("NaN"));
    }
  }
}

}  // namespace
}  // namespace ts
