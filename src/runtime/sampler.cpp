#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ts {

namespace {

// Candidate order used wherever candidates are ranked: higher logit first, ties to the lower id.
// A total order, so the ranked prefix is the same whatever nth_element/sort implementation runs.
// A function object rather than a function so that sort/nth_element inline it.
struct Better {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  }
};

// The first top-p step ranks this many candidates; each further step ranks four times as many, so
// a peaked distribution (the usual case) never sorts more than a few hundred of 200k logits.
constexpr size_t kTopPFirstChunk = 256;

}  // namespace

Sampler::Sampler(const SamplerConfig& cfg, int32_t n_vocab) : cfg_(cfg), n_vocab_(n_vocab), rng_(cfg.seed) {
  // Every check is written so that NaN fails it.
  if (!(cfg.temperature >= 0.0f) || !std::isfinite(cfg.temperature))
    fail("--temp must be a finite number >= 0, got {}", cfg.temperature);
  if (cfg.top_k < 0) fail("--top-k must be >= 0 (0 = off), got {}", cfg.top_k);
  if (!(cfg.top_p > 0.0f && cfg.top_p <= 1.0f)) fail("--top-p must be in (0, 1], got {}", cfg.top_p);
  if (!(cfg.min_p >= 0.0f && cfg.min_p <= 1.0f)) fail("--min-p must be in [0, 1], got {}", cfg.min_p);
  if (!(cfg.repeat_penalty > 0.0f) || !std::isfinite(cfg.repeat_penalty))
    fail("--repeat-penalty must be a finite number > 0, got {}", cfg.repeat_penalty);
  if (cfg.repeat_last_n < 0) fail("--repeat-last-n must be >= 0, got {}", cfg.repeat_last_n);
  if (!std::isfinite(cfg.presence_penalty))
    fail("--presence-penalty must be a finite number, got {}", cfg.presence_penalty);
  if (!std::isfinite(cfg.frequency_penalty))
    fail("--frequency-penalty must be a finite number, got {}", cfg.frequency_penalty);
  if (n_vocab <= 0) fail("sampler: vocabulary size must be > 0, got {}", n_vocab);
  cands_.reserve(static_cast<size_t>(n_vocab));
  probs_.reserve(static_cast<size_t>(n_vocab));
  counts_.assign(static_cast<size_t>(n_vocab), 0);
}

void Sampler::accept(int32_t token) {
  if (token < 0 || token >= n_vocab_) fail("sampler: token id {} is outside the vocabulary [0, {})", token, n_vocab_);
  if (cfg_.repeat_last_n == 0) return;
  history_.push_back(token);
  if (history_.size() > static_cast<size_t>(cfg_.repeat_last_n)) history_.pop_front();
}

// Applies the three penalties to cands_, which is still in id order (cands_[i].id == i).
// As in llama.cpp, each distinct token of the window is penalised once for repetition (positive
// logits divided by the penalty, the rest multiplied, so it always moves down), once for presence,
// and count times for frequency.
void Sampler::apply_penalties() {
  if (history_.empty()) return;
  if (cfg_.repeat_penalty == 1.0f && cfg_.presence_penalty == 0.0f && cfg_.frequency_penalty == 0.0f) return;
  seen_.clear();
  for (int32_t t : history_)
    if (counts_[static_cast<size_t>(t)]++ == 0) seen_.push_back(t);
  for (int32_t t : seen_) {
    float& l = cands_[static_cast<size_t>(t)].logit;
    int32_t& count = counts_[static_cast<size_t>(t)];
    l = l > 0.0f ? l / cfg_.repeat_penalty : l * cfg_.repeat_penalty;
    l -= static_cast<float>(count) * cfg_.frequency_penalty + cfg_.presence_penalty;
    count = 0;  // leave counts_ all zero for the next call
  }
}

// Extends the ranked prefix of cands_ to its first n entries (n <= size). Entries past sorted_
// are all ranked below the prefix already, so only the new stretch is selected and sorted.
void Sampler::sort_prefix_to(size_t n) {
  if (n <= sorted_) return;
  auto first = cands_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  auto mid = cands_.begin() + static_cast<std::ptrdiff_t>(n);
  if (mid != cands_.end()) std::nth_element(first, mid, cands_.end(), Better{});
  std::sort(first, mid, Better{});
  sorted_ = n;
}

int32_t Sampler::sample(const float* logits) {
  cands_.resize(static_cast<size_t>(n_vocab_));
  for (int32_t i = 0; i < n_vocab_; ++i) cands_[static_cast<size_t>(i)] = {i, logits[i]};
  apply_penalties();

  // One pass: reject NaN (from the model, or a penalty overflowing against +inf), find the argmax
  // (ties to the lowest id) and count +inf.
  size_t best = 0;
  size_t n_pos_inf = 0;
  for (size_t i = 0; i < cands_.size(); ++i) {
    float l = cands_[i].logit;
    if (std::isnan(l)) fail("sampler: logit of token {} is NaN", i);
    if (l > cands_[best].logit) best = i;
    n_pos_inf += (l == INFINITY);
  }
  if (cands_[best].logit == -INFINITY) fail("sampler: every logit is -inf, nothing can be sampled");
  if (cfg_.temperature == 0.0f) return cands_[best].id;

  // +inf dominates: only the +inf tokens remain, equally likely. -inf tokens have probability 0
  // and are dropped here so that no later step can pick them.
  if (n_pos_inf > 0) {
    std::erase_if(cands_, [](const Cand& c) { return c.logit != INFINITY; });
    for (Cand& c : cands_) c.logit = 0.0f;
  } else {
    std::erase_if(cands_, [](const Cand& c) { return c.logit == -INFINITY; });
  }
  sorted_ = 0;

  // Top-k: keep the k best (ties to the lower id), ranked.
  if (cfg_.top_k > 0 && static_cast<size_t>(cfg_.top_k) < cands_.size()) {
    sort_prefix_to(static_cast<size_t>(cfg_.top_k));
    cands_.resize(sorted_);
  }

  // Top-p over the temperature-1 softmax of what is left: the smallest ranked prefix whose
  // cumulative probability reaches top_p, at least one token. Ranks lazily in growing chunks.
  if (cfg_.top_p < 1.0f) {
    float max_l = std::max_element(cands_.begin(), cands_.end(), [](const Cand& a, const Cand& b) {
                    return a.logit < b.logit;
                  })->logit;
    double sum = 0.0;
    for (const Cand& c : cands_) sum += std::exp(static_cast<double>(c.logit) - max_l);
    double cum = 0.0;
    size_t kept = 0;
    while (kept < cands_.size() && cum < cfg_.top_p) {
      if (kept == sorted_) sort_prefix_to(std::min(cands_.size(), std::max(kTopPFirstChunk, 4 * sorted_)));
      cum += std::exp(static_cast<double>(cands_[kept].logit) - max_l) / sum;
      ++kept;
    }
    cands_.resize(kept);
  }

  // Min-p: drop tokens whose probability is below min_p times the largest one, i.e. whose
  // exp(logit - max_logit) < min_p. The best token always survives.
  float max_l = std::max_element(cands_.begin(), cands_.end(), [](const Cand& a, const Cand& b) {
                  return a.logit < b.logit;
                })->logit;
  if (cfg_.min_p > 0.0f) {
    std::erase_if(cands_, [&](const Cand& c) {
      return std::exp(static_cast<double>(c.logit) - max_l) < static_cast<double>(cfg_.min_p);
    });
  }

  // Temperature, softmax and the draw. u = top 53 bits of one mt19937_64 output * 2^-53, in [0,1).
  probs_.resize(cands_.size());
  double sum = 0.0;
  for (size_t i = 0; i < cands_.size(); ++i) {
    probs_[i] = std::exp((static_cast<double>(cands_[i].logit) - max_l) / cfg_.temperature);
    sum += probs_[i];
  }
  const double u = static_cast<double>(rng_() >> 11) * 0x1p-53;
  const double target = u * sum;
  double cum = 0.0;
  size_t last_nonzero = 0;
  for (size_t i = 0; i < cands_.size(); ++i) {
    if (probs_[i] == 0.0) continue;
    cum += probs_[i];
    if (target < cum) return cands_[i].id;
    last_nonzero = i;
  }
  // Only reached when u * sum rounds up to sum: the draw belongs to the last token with mass.
  return cands_[last_nonzero].id;
}

}  // namespace ts
