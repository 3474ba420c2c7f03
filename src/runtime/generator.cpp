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

Generator::Generator(const Model& m, Backend& be, const Tokenizer& tok, int64_t n_ctx, const ForwardOptions& fo)
    : fwd_(m, be, fo), seq_(m, be, tok, n_ctx) {}

GenerationStats Generator::generate(const std::vector<int32_t>& prompt, int64_t max_tokens, Sampler& sampler,
                                    const std::function<bool(const std::string&)>& on_text) {
  SequenceParams p;
  p.max_tokens = max_tokens;
  seq_.start(prompt, sampler, p);
  GenerationStats st;
  st.reused_tokens = seq_.reused();
  st.prompt_tokens = seq_.prompt_size() - seq_.reused();
  // The first token's time belongs to the prompt phase's output; decode speed counts the tokens
  // that needed a decode step.
  const double t0 = now_seconds();
  double t1 = t0;
  while (!seq_.done()) {
    SeqStep step = seq_.next_step(fwd_.max_batch());
    if (step.logits && seq_.prefilling()) {  // the prompt's last chunk: its last token is captured
      step.capture = capture_;
      capture_ = nullptr;
    }
    fwd_.run(std::span<const SeqStep>(&step, 1));
    std::optional<SampledToken> t;
    {
      PhaseScope phase(Phase::Sampling);  // sampling, and the detokenizing that comes with it
      t = seq_.advance();
    }
    if (!t) continue;
    if (seq_.generated() == 1) t1 = now_seconds();
    if (!on_text(t->text)) seq_.cancel();
  }
  if (seq_.finish() == Finish::ContextFull)
    fail("the context is full after {} tokens (raise it with --ctx)", seq_.cached().size());
  on_text(seq_.flush());
  st.generated = seq_.generated();
  st.hit_eog = seq_.finish() == Finish::EndOfText;
  st.prompt_seconds = t1 - t0;
  st.decode_seconds = now_seconds() - t1;
  return st;
}

}  // namespace ts
