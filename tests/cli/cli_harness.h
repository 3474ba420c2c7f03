// Running the turbospark CLI from tests, and the model fixtures in tests/data/models. Header-only so
// the cli, model and moe test executables share it without linking each other's helpers.
#pragma once
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/wait.h>

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

namespace ts::test {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ts-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

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

struct CliRun {
  bool exited = false;  // false: killed by a signal (a crash)
  int code = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  q += '\'';
  return q;
}

// Runs `turbospark ARGS...` with stdout and stderr captured in `dir`.
inline CliRun run_cli(const std::vector<std::string>& args, const ScratchDir& dir) {
  std::string cmd = shell_quote(TS_BINARY);
  for (const auto& a : args) cmd += fmt::format(" {}", shell_quote(a));
  const std::string out = dir.file("cli.stdout"), err = dir.file("cli.stderr");
  cmd += fmt::format(" >{} 2>{} </dev/null", shell_quote(out), shell_quote(err));
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.exited = status != -1 && WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

// One model fixture: NAME.gguf with its token ids, exact reference logits and llama.cpp's logits.
struct Fixture {
  std::string name, dir;
  std::string gguf() const { return dir + "/" + name + ".gguf"; }
  std::string tokens() const { return dir + "/" + name + ".tokens.txt"; }
  std::string ref() const { return dir + "/" + name + ".ref.logits.f32"; }
  std::string llamacpp() const { return dir + "/" + name + ".llamacpp.logits.f32"; }
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
