// Token sampling: turns one step's raw logits into the next token id. The pipeline and its order
// follow llama.cpp's default chain so that the same settings mean the same thing as there:
//   penalties (over the last repeat_last_n accepted tokens) -> top-k -> top-p -> min-p
//   -> temperature -> softmax -> seeded draw.
// temperature == 0 is greedy: penalties are still applied, then the argmax (ties to the lowest id)
// is returned without touching the RNG. The draw is reproducible everywhere: a std::mt19937_64
// seeded with cfg.seed, its raw 64-bit output mapped to [0,1) by hand (no standard distribution,
// whose algorithm is implementation-defined).
#pragma once
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace ts {

struct SamplerConfig {
  float temperature = 0.8f;       // --temp: >= 0; 0 = greedy
  int top_k = 40;                 // --top-k: >= 0; 0 = off
  float top_p = 0.95f;            // --top-p: in (0, 1]; 1 = off
  float min_p = 0.05f;            // --min-p: in [0, 1]; 0 = off
  float repeat_penalty = 1.0f;    // --repeat-penalty: > 0; 1 = off
  int repeat_last_n = 64;         // --repeat-last-n: >= 0 tokens of history; 0 = penalties off
  float presence_penalty = 0.0f;  // --presence-penalty: subtracted once from each seen token
  float frequency_penalty = 0.0f; // --frequency-penalty: subtracted once per occurrence
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Invalid settings (negative or NaN temperature, top_p outside (0,1], min_p outside [0,1],
  // negative top_k or repeat_last_n, repeat_penalty <= 0, non-finite penalties, n_vocab <= 0)
  // are a ts::Error naming the CLI flag at fault.
  Sampler(const SamplerConfig& cfg, int32_t n_vocab);

  // Picks the next token from n_vocab raw logits. The logits are read only, never modified.
  // Any NaN logit is a ts::Error. -inf logits are never sampled (unless every logit is -inf, which
  // is an error); +inf logits dominate: the draw is among the +inf tokens only.
  // Does not record the token: call accept() with whatever token is actually emitted.
  int32_t sample(const float* logits);

  // Appends a token (prompt tokens too) to the history the penalties look at; only the last
  // repeat_last_n are kept. An id outside [0, n_vocab) is a ts::Error.
  void accept(int32_t token);

 private:
  struct Cand {
    int32_t id;
    float logit;
  };
  void apply_penalties();
  void sort_prefix_to(size_t n);

  SamplerConfig cfg_;
  int32_t n_vocab_;
  std::mt19937_64 rng_;
  std::deque<int32_t> history_;      // last repeat_last_n accepted tokens, oldest first
  std::vector<Cand> cands_;          // reused per call: the working candidate list
  std::vector<int32_t> counts_;      // reused per call: occurrences per id, all zero between calls
  std::vector<int32_t> seen_;        // reused per call: distinct ids of history_
  size_t sorted_ = 0;                // cands_[0, sorted_) hold the top candidates, best first
  std::vector<double> probs_;        // reused per call: probabilities of the surviving candidates
};

}  // namespace ts
