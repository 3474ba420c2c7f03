#include "runtime/sequence.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ts {
namespace {

// Log-probabilities of the model's raw distribution (before sampling filters), as OpenAI reports
// them: the chosen token's and the k best, best first (ties to the lower id).
void fill_logprobs(const float* logits, int32_t n, int k, SampledToken& t) {
  float mx = -INFINITY;
  for (int32_t i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
  const double lse = mx + std::log(sum);
  t.logprob = static_cast<float>(logits[t.id] - lse);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = i;
  const auto kk = static_cast<size_t>(std::min<int64_t>(k, n));
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(kk), ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  t.top.clear();
  for (size_t i = 0; i < kk; ++i) t.top.push_back({ids[i], static_cast<float>(logits[ids[i]] - lse)});
}

}  // namespace

Sequence::Sequence(const Model& m, Backend& be, const Tokenizer& tok, int64_t n_ctx)
    : tok_(tok), kv_(be, m.hp(), n_ctx), logits_(static_cast<size_t>(m.hp().n_vocab)) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id)
    if (tok.is_eog(id)) eog_ids_.push_back(id);
}

int64_t Sequence::reusable(std::span<const int32_t> prompt) const {
  size_t keep = 0;
  while (keep < cached_.size() && keep + 1 < prompt.size() && cached_[keep] == prompt[keep]) ++keep;
  return static_cast<int64_t>(keep);
}

void Sequence::start(const std::vector<int32_t>& prompt, Sampler& sampler, const SequenceParams& p) {
  if (prompt.empty()) fail("the prompt is empty (no tokens)");
  if (static_cast<int64_t>(prompt.size()) >= kv_.n_ctx)
    fail("the prompt has {} tokens but the context holds {} (raise it with --ctx)", prompt.size(), kv_.n_ctx);
  if (p.max_tokens < 1) fail("the token budget must be at least 1, got {}", p.max_tokens);
  for (const auto& [id, bias] : p.logit_bias)
    if (id < 0 || id >= tok_.n_vocab()) fail("logit bias for token {}, outside the vocabulary [0, {})", id, tok_.n_vocab());
  reused_ = reusable(prompt);
  cached_.resize(static_cast<size_t>(reused_));
  kv_.n_past = reused_;
  prompt_ = prompt;
  next_prompt_ = static_cast<size_t>(reused_);
  for (int32_t id : prompt_) sampler.accept(id);
  sampler_ = &sampler;
  params_ = p;
  text_.emplace(tok_, p.stop);
  generated_ = 0;
  last_ = -1;
  finish_ = Finish::None;
}

SeqStep Sequence::next_step(int64_t max_rows) {
  if (done()) fail("internal: next_step() on a finished sequence");
  SeqStep s;
  s.kv = &kv_;
  if (prefilling()) {
    const int64_t left = static_cast<int64_t>(prompt_.size() - next_prompt_);
    s.ids = prompt_.data() + next_prompt_;
    s.n = std::min(max_rows, left);
    s.logits = s.n == left ? logits_.data() : nullptr;  // only the prompt's last logits are sampled from
  } else {
    s.ids = &last_;
    s.n = 1;
    s.logits = logits_.data();
  }
  step_rows_ = s.n;
  return s;
}

std::optional<SampledToken> Sequence::advance() {
  if (prefilling()) {
    cached_.insert(cached_.end(), prompt_.begin() + static_cast<std::ptrdiff_t>(next_prompt_),
                   prompt_.begin() + static_cast<std::ptrdiff_t>(next_prompt_) + step_rows_);
    next_prompt_ += static_cast<size_t>(step_rows_);
    if (prefilling()) return std::nullopt;
  } else {
    cached_.push_back(last_);
  }
  for (const auto& [id, bias] : params_.logit_bias) {
    float& l = logits_[static_cast<size_t>(id)];
    l = bias <= -100 ? -INFINITY : bias >= 100 ? INFINITY : l + bias;
  }
  if (params_.ignore_eos)
    for (int32_t id : eog_ids_) logits_[static_cast<size_t>(id)] = -INFINITY;
  SampledToken t;
  t.id = sampler_->sample(logits_.data());
  sampler_->accept(t.id);
  if (params_.top_logprobs >= 0) fill_logprobs(logits_.data(), tok_.n_vocab(), params_.top_logprobs, t);
  sampled(t);
  return t;
}

// The order of these checks is the CLI's: an end-of-generation token is not text; the budget ends
// generation before the context limit is looked at.
void Sequence::sampled(SampledToken& t) {
  ++generated_;
  last_ = t.id;
  if (tok_.is_eog(t.id)) finish_ = Finish::EndOfText;
  else if (t.text = text_->push(t.id); text_->stopped()) finish_ = Finish::StopString;
  else if (generated_ >= params_.max_tokens) finish_ = Finish::MaxTokens;
  else if (kv_.n_past + 1 > kv_.n_ctx) finish_ = Finish::ContextFull;
  if (done()) sampler_ = nullptr;
}

void Sequence::cancel() {
  if (done()) return;
  finish_ = Finish::Cancelled;
  sampler_ = nullptr;
}

}  // namespace ts
