// One-call synthesis for the synth tests.
#include "synth/synth_test_util.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ts::synth::test {

SynthResult write_model(const SynthConfig& config, const std::string& path, int threads) {
  ThreadPool pool(threads);
  return synthesize(config, path, pool, {.force = true, .progress = false});
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace ts::synth::test
