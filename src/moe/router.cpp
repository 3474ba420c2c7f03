#include "moe/router.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/error.h"

namespace ts {
namespace {

// Indices of the k largest values, best first; equal values rank the lower index first.
void top_k(const float* v, int64_t n, int64_t k, std::vector<int32_t>& idx, int32_t* out) {
  idx.resize(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  std::copy(idx.begin(), idx.begin() + k, out);
}

}  // namespace

void route(RouterContract c, const float* logits, const float* bias, int64_t n_tok, int64_t n_expert,
           int64_t k, int64_t layer, Routing& out) {
  out.n_tok = n_tok;
  out.k = k;
  out.experts.resize(n_tok * k);
  out.weights.resize(n_tok * k);
  std::vector<float> z(n_expert), p(n_expert);
  std::vector<int32_t> idx;
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* l = logits + t * n_expert;
    for (int64_t e = 0; e < n_expert; ++e) {
      if (std::isnan(l[e])) fail("router of layer {} produced NaN logits (token {} of the batch)", layer, t);
      z[e] = l[e] + (bias ? bias[e] : 0.0f);
    }
    int32_t* sel = out.experts.data() + t * k;
    float* w = out.weights.data() + t * k;
    const float mx = *std::max_element(z.begin(), z.end());
    if (c == RouterContract::BiasedTopKSoftmax) {
      // The ranking is on the biased logits; the softmax covers only the selected ones.
      top_k(z.data(), n_expert, k, idx, sel);
      const float top = z[sel[0]];
      double sum = 0;
      for (int64_t r = 0; r < k; ++r) sum += std::exp(static_cast<double>(z[sel[r]] - top));
      for (int64_t r = 0; r < k; ++r) w[r] = static_cast<float>(std::exp(static_cast<double>(z[sel[r]] - top)) / sum);
    } else {
      // Probabilities over all experts rank them; the selected ones are renormalised to sum to 1.
      double total = 0;
      for (int64_t e = 0; e < n_expert; ++e) total += std::exp(static_cast<double>(z[e] - mx));
      for (int64_t e = 0; e < n_expert; ++e) p[e] = static_cast<float>(std::exp(static_cast<double>(z[e] - mx)) / total);
      top_k(p.data(), n_expert, k, idx, sel);
      double sum = 0;
      for (int64_t r = 0; r < k; ++r) sum += p[sel[r]];
      for (int64_t r = 0; r < k; ++r) w[r] = static_cast<float>(p[sel[r]] / sum);
    }
  }
}

}  // namespace ts
