#include "runtime/generator.h"

#include <chrono>

#include "util/error.h"
#include "util/phase_clock.h"

namespace ts {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string GenerationStats::summary() const {
  const double pp = prompt_seconds > 0 ? prompt_tokens / prompt_seconds : 0;
  const double tg = decode_seconds > 0 && generated > 1 ? (generated - 1) / decode_seconds : 0;
  return fmt::format("prompt {} tok ({} reused), {:.1f} tok/s | decode {} tok, {:.1f} tok/s", prompt_tokens,
                     reused_tokens, pp, generated, tg);
}

Generator::Generator(const Model& m, Backend& be, int64_t n_ctx, const ForwardOptions& fo)
    : m_(m), be_(be), kv_(be, m.hp(), n_ctx), fwd_(m, be, fo), logits_(m.hp().n_vocab) {}

GenerationStats Generator::generate(const std::vector<int32_t>& prompt, int64_t max_tokens, Sampler& sampler,
                                    const std::function<bool(int32_t)>& is_eog,
                                    const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) fail("the prompt is empty (no tokens)");
  if (static_cast<int64_t>(prompt.size()) >= kv_.n_ctx)
    fail("the prompt has {} tokens but the context holds {} (raise it with --ctx)", prompt.size(), kv_.n_ctx);
  GenerationStats st;
  // Reuse the cached prefix, but always recompute at least the last prompt token for its logits.
  size_t keep = 0;
  while (keep < cached_.size() && keep + 1 < prompt.size() && cached_[keep] == prompt[keep]) ++keep;
  kv_.n_past = static_cast<int64_t>(keep);
  cached_.resize(keep);
  st.reused_tokens = static_cast<int64_t>(keep);

  const double t0 = now_seconds();
  for (size_t i = keep; i < prompt.size(); i += fwd_.max_batch()) {
    const int64_t n = std::min<int64_t>(fwd_.max_batch(), static_cast<int64_t>(prompt.size() - i));
    const bool last = i + n == prompt.size();  // only the last chunk's logits are sampled from
    const SeqStep s{&kv_, prompt.data() + i, n, false, last ? logits_.data() : nullptr, last ? capture_ : nullptr};
    fwd_.run(std::span<const SeqStep>(&s, 1));
  }
  capture_ = nullptr;
  cached_.insert(cached_.end(), prompt.begin() + keep, prompt.end());
  for (int32_t id : prompt) sampler.accept(id);
  st.prompt_tokens = static_cast<int64_t>(prompt.size() - keep);
  const double t1 = now_seconds();
  st.prompt_seconds = t1 - t0;

  // The first token's time belongs to the prompt phase's output; decode speed counts the tokens
  // that needed a decode step.
  while (st.generated < max_tokens) {
    int32_t id;
    {
      PhaseScope phase(Phase::Sampling);
      id = sampler.sample(logits_.data());
      sampler.accept(id);
    }
    ++st.generated;
    if (is_eog(id)) {
      st.hit_eog = true;
      break;
    }
    if (!on_token(id)) break;
    if (st.generated == max_tokens) break;
    if (kv_.n_past + 1 > kv_.n_ctx) fail("the context is full after {} tokens (raise it with --ctx)", kv_.n_past);
    fwd_.run(kv_, &id, 1, false, logits_.data());
    cached_.push_back(id);
  }
  st.decode_seconds = now_seconds() - t1;
  return st;
}

}  // namespace ts
