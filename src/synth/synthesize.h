// Writes a synthesized model to disk, streaming: weights are generated and quantized a row block at
// a time on the thread pool while the previous block is being written, so memory stays at a few MB
// whatever the model size, and the bytes do not depend on the thread count.
#pragma once
#include <cstdint>
#include <string>

#include "synth/synth_config.h"
#include "util/thread_pool.h"

namespace ts::synth {

struct SynthOptions {
  bool force = false;     // replace an existing output file
  bool progress = false;  // report progress on stderr
};

struct SynthResult {
  uint64_t bytes = 0;     // file size
  size_t tensors = 0;
  double seconds = 0;
};

// Checks everything (options, shapes, output path, --vocab-from) before the first byte is written.
// The file appears under `out` only when complete: errors and Ctrl-C leave nothing named `out`.
SynthResult synthesize(const SynthConfig& c, const std::string& out, ThreadPool& pool, const SynthOptions& opt);

// Elements [first, first + n) of a tensor, as synthesize() makes them (exposed for tests).
void generate(uint64_t seed, const std::string& tensor, float mean, float stddev, uint64_t first, int64_t n, float* dst);

}  // namespace ts::synth
