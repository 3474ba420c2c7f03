// One sequence's generation state: its KV cache and the tokens in it, the prompt being prefilled in
// chunks, sampling, end-of-generation / stop-string / token-budget / full-context detection and the
// text released as it streams. The CLI's Generator drives one Sequence; the server's scheduler puts
// many into each forward call. Both go through this class, so a request generates the same tokens
// whichever of them runs it (a sequence's logits are the same bytes alone or batched).
//
// Driving it: start(); then, until done(), put next_step() into a Forward::run (alone or with other
// sequences' steps) and call advance() after the run. A step either prefills the next chunk of the
// prompt or decodes the last sampled token; advance() samples when the step produced logits.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/forward.h"
#include "runtime/sampler.h"
#include "runtime/text_stream.h"
#include "tokenizer/tokenizer.h"

namespace ts {

enum class Finish {
  None,         // still generating
  EndOfText,    // the model emitted an end-of-generation token
  StopString,   // a stop string was generated (the text ends before it)
  MaxTokens,    // the token budget is used up
  ContextFull,  // the KV cache has no room for the next token
  Cancelled,    // cancel() was called
};

struct SequenceParams {
  int64_t max_tokens = 256;
  std::vector<std::string> stop;  // stop strings
  int top_logprobs = -1;          // -1: no log-probabilities; else the chosen token's and this many best
  bool ignore_eos = false;        // never sample end-of-generation tokens (benchmarks: exactly max_tokens)
  // Added to a token's logit before sampling (OpenAI's logit_bias); -100 bans it, +100 forces it.
  std::vector<std::pair<int32_t, float>> logit_bias;
};

struct TokenLogprob {
  int32_t id;
  float logprob;
};

struct SampledToken {
  int32_t id = -1;
  std::string text;                // text released by this token (stop strings held back / cut)
  float logprob = 0;               // of the chosen token, when requested
  std::vector<TokenLogprob> top;   // the best top_logprobs tokens, best first, when requested
};

class Sequence {
 public:
  // Allocates a KV cache of n_ctx positions; it is freed with the Sequence.
  Sequence(const Model& m, Backend& be, const Tokenizer& tok, int64_t n_ctx);
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  // How many leading tokens of `prompt` start() would keep from the cache: the common prefix with
  // the cached tokens, short of the last prompt token (recomputed for its logits).
  int64_t reusable(std::span<const int32_t> prompt) const;

  // Begins generating a continuation of `prompt`, keeping reusable(prompt) cached tokens. The
  // sampler (the caller's, seeded per request) must outlive the generation. An empty prompt or one
  // that does not fit the context is a ts::Error.
  void start(const std::vector<int32_t>& prompt, Sampler& sampler, const SequenceParams& p);

  bool done() const { return finish_ != Finish::None; }
  Finish finish() const { return finish_; }
  bool prefilling() const { return next_prompt_ < prompt_.size(); }
  int64_t prompt_left() const { return static_cast<int64_t>(prompt_.size() - next_prompt_); }  // rows still to prefill

  // This sequence's part of the next forward call: the next (at most max_rows) prompt tokens, or the
  // last sampled token. Logits are requested only when the step ends the prompt or decodes.
  SeqStep next_step(int64_t max_rows);
  // After the forward call that ran next_step(): records what entered the cache and, when the step
  // produced logits, samples and returns the next token (whose text may be empty: held back, or the
  // token ended generation). done() tells whether generation ended with it.
  std::optional<SampledToken> advance();
  // Text still held back when generation ended (call once done()).
  std::string flush() { return text_ ? text_->flush() : std::string(); }
  // Ends generation (e.g. the client went away); the cache keeps what was computed.
  void cancel();

  int64_t n_ctx() const { return kv_.n_ctx; }
  int64_t prompt_size() const { return static_cast<int64_t>(prompt_.size()); }
  int64_t reused() const { return reused_; }
  int64_t generated() const { return generated_; }
  int32_t last_sampled() const { return last_; }  // -1 before the first sample
  // Tokens whose K/V are in the cache, in order.
  const std::vector<int32_t>& cached() const { return cached_; }

 private:
  void sampled(SampledToken& t);

  const Tokenizer& tok_;
  KvCache kv_;
  std::vector<int32_t> cached_;
  std::vector<int32_t> prompt_;
  size_t next_prompt_ = 0;  // first prompt token not yet sent to the model
  int64_t step_rows_ = 0;   // rows of the step handed out by next_step()
  int32_t last_ = -1;       // sampled token to decode next
  Sampler* sampler_ = nullptr;
  SequenceParams params_;
  std::optional<TextStream> text_;
  std::vector<float> logits_;
  std::vector<int32_t> eog_ids_;  // the vocabulary's end-of-generation tokens
  int64_t reused_ = 0, generated_ = 0;
  Finish finish_ = Finish::Cancelled;  // nothing to generate before start()
};

}  // namespace ts
