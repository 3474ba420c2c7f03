// Helpers for the synth tests: per-test scratch paths and a one-call "synthesize this preset".
#pragma once
#include <string>

#include "synth/synthesize.h"

namespace ts::synth::test {

// A fresh scratch directory for the running test, removed on destruction.
class Scratch {
 public:
  Scratch();
  ~Scratch();
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

// Synthesizes `config` to `path` on a pool of `threads` threads, replacing any existing file.
SynthResult write_model(const SynthConfig& config, const std::string& path, int threads = 2);

// The whole file, for byte comparisons.
std::string file_bytes(const std::string& path);

}  // namespace ts::synth::test
