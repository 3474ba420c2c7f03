// Helpers for the MoE and residency tests: the MoE model fixtures, and a GGUF model copied into memory so that a
// test can alter one thing (a tensor's type, a missing tensor, a metadata value, weight values) and
// write it back with the project's GgufWriter.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_harness.h"
#include "gguf/gguf.h"

namespace ts::test {

// The fixtures whose architecture routes experts (<arch>.expert_count > 0). Inline: the residency
// tests use it without linking the MoE tests' helpers.
inline std::vector<Fixture> moe_fixtures() {
  std::vector<Fixture> v;
  for (const Fixture& f : model_fixtures()) {
    const auto g = GgufFile::open(f.gguf());
    if (g->get_int(g->get_string("general.architecture") + ".expert_count", 0) > 0) v.push_back(f);
  }
  return v;
}

struct GgufCopy {
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;  // ggml order
    std::vector<uint8_t> bytes;
  };
  uint64_t alignment = 32;
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::vector<Tensor> tensors;

  static GgufCopy read(const std::string& path);
  void write(const std::string& path) const;
  // Lookups that throw when the key or tensor is missing (so an edit can never silently miss).
  GgufValue& value(const std::string& key);
  Tensor& tensor(const std::string& name);
  void remove_tensor(const std::string& name);
};

}  // namespace ts::test
