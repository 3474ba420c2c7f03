// Text generation over one sequence: prefill the prompt in chunks, then sample and decode one token
// at a time until an end-of-generation token, the token budget, or the caller says stop. The KV
// cache is kept between calls, and a new prompt that shares a prefix with what is cached only
// prefills the difference (multi-turn chat re-renders the whole conversation each turn).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/forward.h"
#include "runtime/sampler.h"

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
  Generator(const Model& m, Backend& be, int64_t n_ctx, const ForwardOptions& fo);

  // on_token(id) is called for every sampled token that is not end-of-generation; return false to
  // stop. is_eog decides which ids end generation. Returns the statistics of this call.
  GenerationStats generate(const std::vector<int32_t>& prompt, int64_t max_tokens, Sampler& sampler,
                           const std::function<bool(int32_t)>& is_eog, const std::function<bool(int32_t)>& on_token);
  int64_t n_ctx() const { return kv_.n_ctx; }
  // Captures the residual after every layer at the last prompt token of the next generate() call.
  void capture_next(ResidualCapture* c) { capture_ = c; }

 private:
  const Model& m_;
  Backend& be_;
  KvCache kv_;
  Forward fwd_;
  std::vector<int32_t> cached_;  // the tokens whose K/V are in the cache, in order
  std::vector<float> logits_;
  ResidualCapture* capture_ = nullptr;
};

}  // namespace ts
