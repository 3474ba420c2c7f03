// Helpers for the GGUF reader tests: a byte-level builder for hand-made (and deliberately broken)
// headers, and a small valid model written with GgufWriter.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "support/scratch_dir.h"

namespace ts::test {

std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

// Little-endian GGUF bytes, field by field; nothing is validated, which is the point.
class RawGguf {
 public:
  RawGguf& u8(uint8_t v) { return put(v); }
  RawGguf& u32(uint32_t v) { return put(v); }
  RawGguf& u64(uint64_t v) { return put(v); }
  RawGguf& str(const std::string& s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  // magic, version, tensor count, kv count
  RawGguf& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
  }
  RawGguf& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  // name, dims, ggml type, offset
  RawGguf& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  RawGguf& pad(size_t alignment) {
    bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  RawGguf& zeros(size_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }
  std::vector<uint8_t> bytes;

 private:
  template <typename T>
  RawGguf& put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    bytes.insert(bytes.end(), b, b + sizeof(T));
    return *this;
  }
};

// Writes a small valid model (metadata of several types, four tensors of different types and shapes,
// tensor bytes that follow a known pattern) with GgufWriter.
void write_small_model(const std::string& path, uint64_t alignment = 32);

// Opens `bytes` (written to `path`) and returns the ts::Error message; "" if it opened fine.
std::string open_error(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace ts::test
