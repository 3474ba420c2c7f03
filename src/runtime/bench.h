// Throughput measurement in the style of llama-bench: prompt processing (pp: a prompt of n_prompt
// tokens prefilled in --batch chunks, logits of the last token only) and text generation (tg: n_gen
// tokens decoded one at a time), each repeated after a warm-up, from an empty cache or after a prompt
// of n_depth tokens already in it (llama-bench's -d). With several sequences, tg decodes that many
// at once, one row each per step, each in its own cache (a server's decode steps, as
// llama-batched-bench's S_TG), and counts the tokens of all of them. Token ids are pseudo-random, as
// llama-bench's; neither the depth's prefill nor sampling is timed.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/model.h"

namespace ts {

struct BenchConfig {
  int64_t n_prompt = 512;  // 0: no pp test
  int64_t n_gen = 128;     // 0: no tg test
  int64_t n_depth = 0;     // tokens in the KV cache before each test
  int reps = 5;
  int64_t batch = 512;     // prefill chunk (tokens per forward call)
  int64_t sequences = 1;   // tg: sequences decoded together
};

struct Spread {
  double mean = 0, sd = 0, min = 0, max = 0;
  std::vector<double> samples;
};
Spread spread(std::vector<double> samples);

struct BenchResult {
  Spread pp, tg;                 // tokens per second
  uint64_t decode_bytes = 0;     // weight bytes one decode step reads
  int64_t positions = 0;         // the most KV cache positions a test filled (depth included)
  int64_t tg_tokens = 0;         // tokens one tg repetition put into the caches, all sequences
};

BenchResult run_bench(const Model& m, Backend& be, const BenchConfig& c);

// Weight bytes one decode step touches: the embedding row, every non-expert matrix and vector, the
// k routed experts of each MoE layer, and the output head.
uint64_t decode_weight_bytes(const Model& m);

// The machine's read bandwidth in bytes per second with `threads` threads: the best of a few passes
// summing a buffer far larger than the caches.
double measure_read_bandwidth(int threads);

}  // namespace ts
