// GGUF (versions 2 and 3): metadata key/values of every type, including nested arrays, and a tensor
// index over a memory-mapped file. Parsing is defensive: every count, length and offset read from the
// file is checked against what is left of it, so a truncated or hostile file is a clear ts::Error,
// never an out-of-bounds read or a huge allocation.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/types.h"
#include "util/mapped_file.h"

namespace ts {

enum class GgufValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9,
  U64 = 10, I64 = 11, F64 = 12,
};
std::string_view gguf_type_name(GgufValueType t);

struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  // Scalars: integers and bools in `i` (u64 keeps its bit pattern), floats in `f`, strings in `s`.
  int64_t i = 0;
  double f = 0;
  std::string s;
  // Arrays: the element type and the elements, in the vector that matches it.
  GgufValueType elem_type = GgufValueType::U8;
  std::vector<int64_t> ints;          // integer and bool elements
  std::vector<double> floats;         // f32 / f64 elements
  std::vector<std::string> strings;   // string elements
  std::vector<GgufValue> arrays;      // nested arrays
  size_t array_size() const;
  std::string to_string(size_t max_items = 8) const;  // for `inspect`
};

struct GgufTensor {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the contiguous (row) length
  uint64_t offset = 0;         // from the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;
  uint64_t dim(size_t i) const { return i < dims.size() ? dims[i] : 1; }
  uint64_t row_bytes() const { return ts::row_bytes(type, dims[0]); }
};

class GgufFile {
 public:
  // Maps and parses `path`; throws ts::Error naming the file and the problem.
  static std::unique_ptr<GgufFile> open(const std::string& path);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& path() const { return file_->path(); }
  const MappedFile& file() const { return *file_; }

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed accessors: a missing key (without a default) or a value of the wrong type is an error that
  // names the key. Integers of any width convert when the value fits.
  std::string get_string(std::string_view key) const;
  std::string get_string(std::string_view key, std::string_view def) const;
  int64_t get_int(std::string_view key) const;
  int64_t get_int(std::string_view key, int64_t def) const;
  double get_float(std::string_view key) const;
  double get_float(std::string_view key, double def) const;
  bool get_bool(std::string_view key, bool def) const;
  const std::vector<std::string>& get_string_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::vector<double> get_float_array(std::string_view key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;
  const GgufTensor& tensor(std::string_view name) const;  // error if missing

 private:
  GgufFile() = default;
  void parse();
  const GgufValue& require(std::string_view key) const;

  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace ts
