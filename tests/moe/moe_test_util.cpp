#include "moe/moe_test_util.h"

#include <algorithm>
#include <stdexcept>

#include "gguf/gguf_writer.h"

namespace ts::test {

GgufCopy GgufCopy::read(const std::string& path) {
  const auto g = GgufFile::open(path);
  GgufCopy c;
  c.alignment = g->alignment();
  c.metadata = g->metadata();
  for (const GgufTensor& t : g->tensors())
    c.tensors.push_back({t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes)});
  return c;
}

void GgufCopy::write(const std::string& path) const {
  GgufWriter w(path, alignment);
  for (const auto& [key, v] : metadata) w.set(key, v);
  for (const Tensor& t : tensors) w.add_tensor(t.name, t.type, t.dims);
  w.begin_data();
  for (const Tensor& t : tensors) w.write(t.bytes.data(), t.bytes.size());
  w.finish();
}

GgufValue& GgufCopy::value(const std::string& key) {
  for (auto& [k, v] : metadata)
    if (k == key) return v;
  throw std::runtime_error("no metadata key '" + key + "'");
}

GgufCopy::Tensor& GgufCopy::tensor(const std::string& name) {
  for (Tensor& t : tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor '" + name + "'");
}

void GgufCopy::remove_tensor(const std::string& name) {
  const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.name == name; });
  if (it == tensors.end()) throw std::runtime_error("no tensor '" + name + "'");
  tensors.erase(it);
}

}  // namespace ts::test
