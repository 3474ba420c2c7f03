// The metadata keys of a synthesized model: general.*, the <arch>.* hyperparameters llama.cpp reads
// for the architecture, and either tokenizer.ggml.model = "none" (token ids in, logits out) or the
// tokenizer.* keys copied from another GGUF.
#pragma once
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "synth/synth_config.h"
#include "synth/synth_tensors.h"

namespace ts::synth {

// The number of tokens in `vocab`'s tokenizer.ggml.tokens; errors if it has none.
int64_t vocab_size_of(const GgufFile& vocab);

// `vocab` may be null (no vocabulary).
void write_metadata(GgufWriter& w, const SynthConfig& c, const std::vector<TensorSpec>& tensors, const GgufFile* vocab);

}  // namespace ts::synth
