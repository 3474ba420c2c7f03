// Running the turbospark CLI from tests, and the model fixtures in tests/data/models. Header-only so
// the cli, model and moe test executables share it without linking each other's helpers; processes
// and scratch directories come from tests/support, which every test executable links.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/process.h"
#include "support/scratch_dir.h"

namespace ts::test {

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A float32 file (the logits format) as floats; throws if it cannot be read whole.
inline std::vector<float> read_floats(const std::string& path) {
  const std::string bytes = read_text(path);
  if (bytes.empty() || bytes.size() % sizeof(float)) throw std::runtime_error("no float32 data in '" + path + "'");
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// Bitwise equality (NaN-safe, and -0 differs from +0): the determinism contracts are about bytes.
inline bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

using CliRun = ProcessResult;

// Runs `turbospark ARGS...` directly (posix_spawn) and asserts, in every test that uses it, that the
// binary was neither killed by a signal nor hung: whatever the input, the CLI must end with an exit
// code and a message.
inline CliRun run_cli(const std::vector<std::string>& args, const ProcessOptions& opt = {}) {
  std::vector<std::string> argv{TS_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  const CliRun r = run_process(argv, opt);
  EXPECT_EQ(r.signal, 0) << "turbospark " << fmt::format("{}", fmt::join(args, " ")) << ": " << r.describe() << "\n" << r.err;
  EXPECT_FALSE(r.timed_out) << "turbospark " << fmt::format("{}", fmt::join(args, " ")) << " hung\n" << r.err;
  return r;
}

// One model fixture: NAME.gguf with its token ids, exact reference logits and, for the fixtures from
// ../shared, llama.cpp's logits (the gemma3 ones have none: they are judged by the exact bound only).
struct Fixture {
  std::string name, dir;
  std::string gguf() const { return dir + "/" + name + ".gguf"; }
  std::string tokens() const { return dir + "/" + name + ".tokens.txt"; }
  std::string ref() const { return dir + "/" + name + ".ref.logits.f32"; }
  std::string llamacpp() const { return dir + "/" + name + ".llamacpp.logits.f32"; }
  bool has_llamacpp() const { return std::filesystem::exists(llamacpp()); }
  // F32/F16 weights are judged by relative L2 error, quantized ones relative to llama.cpp.
  bool unquantized() const { return name.ends_with("-f32") || name.ends_with("-f16"); }
};

// GoogleTest prints a parameter by its name rather than as raw bytes.
inline void PrintTo(const Fixture& f, std::ostream* os) { *os << f.name; }

inline std::string models_dir() { return std::string(TS_TEST_DATA) + "/models"; }

// Every *.gguf in tests/data/models, sorted by name.
inline std::vector<Fixture> model_fixtures() {
  std::vector<Fixture> v;
  for (const auto& e : std::filesystem::directory_iterator(models_dir()))
    if (e.path().extension() == ".gguf") v.push_back({e.path().stem().string(), models_dir()});
  std::sort(v.begin(), v.end(), [](const Fixture& a, const Fixture& b) { return a.name < b.name; });
  return v;
}

// A fixture name as a GoogleTest parameter name (letters, digits and '_' only).
inline std::string test_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace ts::test
