// Helpers for the synth tests: a one-call "synthesize this preset".
#pragma once
#include <string>

#include "support/scratch_dir.h"  // the synth tests write into a ts::test::ScratchDir
#include "synth/synthesize.h"

namespace ts::synth::test {

// Synthesizes `config` to `path` on a pool of `threads` threads, replacing any existing file.
SynthResult write_model(const SynthConfig& config, const std::string& path, int threads = 2);

// The whole file, for byte comparisons.
std::string file_bytes(const std::string& path);

}  // namespace ts::synth::test
