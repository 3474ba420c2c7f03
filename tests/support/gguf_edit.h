// Copies of GGUF files with edited metadata or tensors, for tests of what the loader must refuse
// (or accept): read a whole file into memory, change it, write it back with GgufWriter.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"

namespace ts::test {

struct GgufContents {
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
  };
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::vector<Tensor> tensors;

  void set(const std::string& key, GgufValue v);  // replaces the key, or appends it
  void erase(const std::string& key);
  Tensor& tensor(const std::string& name);        // throws when absent
};

GgufContents read_gguf(const std::string& path);
void write_gguf(const GgufContents& c, const std::string& path);

GgufValue u32_value(uint32_t v);
GgufValue f32_value(float v);
GgufValue string_value(const std::string& s);

}  // namespace ts::test
