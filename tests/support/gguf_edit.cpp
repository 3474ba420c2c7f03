#include "support/gguf_edit.h"

#include <algorithm>
#include <stdexcept>

#include "gguf/gguf_writer.h"

namespace ts::test {

void GgufContents::set(const std::string& key, GgufValue v) {
  for (auto& [k, old] : metadata)
    if (k == key) {
      old = std::move(v);
      return;
    }
  metadata.emplace_back(key, std::move(v));
}

void GgufContents::erase(const std::string& key) {
  std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
}

GgufContents::Tensor& GgufContents::tensor(const std::string& name) {
  for (Tensor& t : tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor '" + name + "'");
}

GgufContents read_gguf(const std::string& path) {
  const auto g = GgufFile::open(path);
  GgufContents c;
  c.metadata = g->metadata();
  for (const GgufTensor& t : g->tensors()) c.tensors.push_back({t.name, t.type, t.dims, {t.data, t.data + t.n_bytes}});
  return c;
}

void write_gguf(const GgufContents& c, const std::string& path) {
  uint64_t alignment = 32;
  for (const auto& [k, v] : c.metadata)
    if (k == "general.alignment") alignment = static_cast<uint64_t>(v.i);
  GgufWriter w(path, alignment);
  for (const auto& [k, v] : c.metadata) w.set(k, v);
  for (const auto& t : c.tensors) w.add_tensor(t.name, t.type, t.dims);
  w.begin_data();
  for (const auto& t : c.tensors) w.write(t.data.data(), t.data.size());
  w.finish();
}

GgufValue u32_value(uint32_t v) {
  GgufValue x;
  x.type = GgufValueType::U32;
  x.i = v;
  return x;
}

GgufValue f32_value(float v) {
  GgufValue x;
  x.type = GgufValueType::F32;
  x.f = v;
  return x;
}

GgufValue string_value(const std::string& s) {
  GgufValue x;
  x.type = GgufValueType::STRING;
  x.s = s;
  return x;
}

}  // namespace ts::test
