// Text generation over one sequence for the CLI: prefill the prompt in chunks, then sample and
// decode one token at a time until an end-of-generation token, the token budget, or the caller says
// stop. The per-sequence logic lives in runtime/sequence.h (the server runs the same code over many
// sequences); this adds the one-sequence loop and the timing. The KV cache is kept between calls, and
// a new prompt that shares a prefix with what is cached only prefills the difference (multi-turn chat
// re-renders the whole conversation each turn).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/forward.h"
#include "runtime/sampler.h"
#include "runtime/sequence.h"

namespace ts {

struct GenerationStats {
  int64_t prompt_tokens = 0;    // tokens prefilled this call (after prefix reuse)
  int64_t reused_tokens = 0;    // prompt tokens already in the cache
  int64_t generated = 0;
  double prompt_seconds = 0, decode_seconds = 0;
  bool hit_eog = false;
  std::string summary() const;  // "prompt N tok, X tok/s | decode M tok, Y tok/s"
  int64_t forward_tokens() const { return prompt_tokens + (generated > 0 ? generated - 1 : 0); }  // tokens run through the model
};

class Generator {
 public:
  Generator(const Model& m, Backend& be, const Tokenizer& tok, int64_t n_ctx, const ForwardOptions& fo);

  // on_text(piece) receives the reply's text as it becomes final (never a broken UTF-8 sequence);
  // return false to stop. A full context is a ts::Error (the CLI never overwrites silently).
  GenerationStats generate(const std::vector<int32_t>& prompt, int64_t max_tokens, Sampler& sampler,
                           const std::function<bool(const std::string&)>& on_text);
  int64_t n_ctx() const { return seq_.n_ctx(); }
  // Captures the residual after every layer at the last prompt token of the next generate() call.
  void capture_next(ResidualCapture* c) { capture_ = c; }

 private:
  Forward fwd_;
  Sequence seq_;
  ResidualCapture* capture_ = nullptr;
};

}  // namespace ts
