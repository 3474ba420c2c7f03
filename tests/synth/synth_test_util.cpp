// Scratch directories and one-call synthesis for the synth tests.
#include "synth/synth_test_util.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ts::synth::test {

Scratch::Scratch() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ts_synth_test_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
}

Scratch::~Scratch() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

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
