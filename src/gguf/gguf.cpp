#include "gguf/gguf.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace ts {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxArrayDepth = 8;
constexpr uint32_t kMaxDims = 4;

// A bounds-checked little-endian cursor over the mapped bytes.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n, const std::string& path) : p_(p), n_(n), path_(path) {}
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > left()) fail("'{}': {} claims {} bytes at offset {}, but the file ends after {}", path_, what, len, pos_, left());
    std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }
  [[noreturn]] void truncated(const char* what) const {
    fail("'{}': file is truncated: {} at offset {} runs past the end ({} bytes)", path_, what, pos_, n_);
  }
  void need(size_t k, const char* what) const {
    if (k > left()) truncated(what);
  }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& path_;
};

size_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::BOOL: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    case GgufValueType::STRING: return 8;  // at least its length field
    case GgufValueType::ARRAY: return 12;  // at least its type and count
  }
  return 0;
}

bool valid_type(uint32_t t) { return t <= 12; }

GgufValueType read_type(Reader& r, const std::string& key) {
  const uint32_t t = r.read<uint32_t>("metadata value type");
  if (!valid_type(t)) fail("'{}': metadata key '{}' has unknown value type {}", r.path(), key, t);
  return static_cast<GgufValueType>(t);
}

void read_scalar(Reader& r, GgufValueType t, GgufValue& v, const std::string& key) {
  switch (t) {
    case GgufValueType::U8: v.i = r.read<uint8_t>("u8 value"); break;
    case GgufValueType::I8: v.i = r.read<int8_t>("i8 value"); break;
    case GgufValueType::U16: v.i = r.read<uint16_t>("u16 value"); break;
    case GgufValueType::I16: v.i = r.read<int16_t>("i16 value"); break;
    case GgufValueType::U32: v.i = r.read<uint32_t>("u32 value"); break;
    case GgufValueType::I32: v.i = r.read<int32_t>("i32 value"); break;
    case GgufValueType::U64: v.i = static_cast<int64_t>(r.read<uint64_t>("u64 value")); break;
    case GgufValueType::I64: v.i = r.read<int64_t>("i64 value"); break;
    case GgufValueType::F32: v.f = r.read<float>("f32 value"); break;
    case GgufValueType::F64: v.f = r.read<double>("f64 value"); break;
    case GgufValueType::BOOL: {
      const uint8_t b = r.read<uint8_t>("bool value");
      if (b > 1) fail("'{}': metadata key '{}' has a bool of value {}", r.path(), key, b);
      v.i = b;
      break;
    }
    case GgufValueType::STRING: v.s = r.read_string("string value"); break;
    case GgufValueType::ARRAY: break;
  }
}

void read_value(Reader& r, GgufValueType t, GgufValue& v, const std::string& key, int depth) {
  v.type = t;
  if (t != GgufValueType::ARRAY) {
    read_scalar(r, t, v, key);
    return;
  }
  if (depth >= kMaxArrayDepth) fail("'{}': metadata key '{}' nests arrays deeper than {}", r.path(), key, kMaxArrayDepth);
  v.elem_type = read_type(r, key);
  const uint64_t n = r.read<uint64_t>("array length");
  // Every element takes at least scalar_size bytes, so a count the file cannot hold is rejected
  // before anything is allocated.
  if (n > r.left() / scalar_size(v.elem_type))
    fail("'{}': metadata key '{}' claims {} array elements, more than the {} bytes left can hold", r.path(), key, n, r.left());
  // In memory an element takes up to 32 bytes (a std::string) where the file may spend 1, so the
  // up-front reservation is capped; beyond it the vectors grow only as elements are actually read.
  const size_t reserve = static_cast<size_t>(std::min<uint64_t>(n, 1 << 16));
  switch (v.elem_type) {
    case GgufValueType::STRING:
      v.strings.reserve(reserve);
      for (uint64_t k = 0; k < n; ++k) v.strings.push_back(r.read_string("string array element"));
      break;
    case GgufValueType::F32: case GgufValueType::F64: {
      v.floats.reserve(reserve);
      GgufValue e;
      for (uint64_t k = 0; k < n; ++k) {
        read_scalar(r, v.elem_type, e, key);
        v.floats.push_back(e.f);
      }
      break;
    }
    case GgufValueType::ARRAY:
      v.arrays.reserve(reserve);
      for (uint64_t k = 0; k < n; ++k) read_value(r, GgufValueType::ARRAY, v.arrays.emplace_back(), key, depth + 1);
      break;
    default: {
      v.ints.reserve(reserve);
      GgufValue e;
      for (uint64_t k = 0; k < n; ++k) {
        read_scalar(r, v.elem_type, e, key);
        v.ints.push_back(e.i);
      }
    }
  }
}

bool is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16: case GgufValueType::I16:
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::U64: case GgufValueType::I64:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string_view gguf_type_name(GgufValueType t) {
  static constexpr std::string_view names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                               "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "?";
}

size_t GgufValue::array_size() const {
  return ints.size() + floats.size() + strings.size() + arrays.size();
}

std::string GgufValue::to_string(size_t max_items) const {
  switch (type) {
    case GgufValueType::STRING: return s;
    case GgufValueType::F32: case GgufValueType::F64: return fmt::format("{}", f);
    case GgufValueType::BOOL: return i ? "true" : "false";
    case GgufValueType::U64: return fmt::format("{}", static_cast<uint64_t>(i));
    case GgufValueType::ARRAY: {
      std::string out = fmt::format("[{} x {}]", array_size(), gguf_type_name(elem_type));
      const size_t n = std::min(array_size(), max_items);
      std::vector<std::string> items;
      for (size_t k = 0; k < n; ++k) {
        if (!strings.empty()) items.push_back(fmt::format("'{}'", strings[k]));
        else if (!floats.empty()) items.push_back(fmt::format("{}", floats[k]));
        else if (!ints.empty()) items.push_back(fmt::format("{}", ints[k]));
        else items.push_back(arrays[k].to_string(max_items));
      }
      if (n) out += fmt::format(" {}{}", fmt::join(items, ", "), array_size() > n ? ", ..." : "");
      return out;
    }
    default: return fmt::format("{}", i);
  }
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->file_ = std::make_unique<MappedFile>(path);
  g->parse();
  return g;
}

void GgufFile::parse() {
  const std::string& path = file_->path();
  Reader r(file_->data(), file_->size(), path);
  if (file_->size() < 4) fail("'{}' is not a GGUF file (only {} bytes)", path, file_->size());
  const uint32_t magic = r.read<uint32_t>("magic");
  if (magic != kMagic) fail("'{}' is not a GGUF file (bad magic)", path);
  version_ = r.read<uint32_t>("version");
  if (version_ == 1) fail("'{}': GGUF version 1 is not supported (re-convert the model with a current llama.cpp)", path);
  if (version_ != 2 && version_ != 3) {
    // A big-endian writer's small version number reads as a multiple of 2^16 here.
    if (version_ != 0 && (version_ & 0xffff) == 0) fail("'{}': big-endian GGUF files are not supported", path);
    fail("'{}': unsupported GGUF version {}", path, version_);
  }
  const uint64_t n_tensors = r.read<uint64_t>("tensor count");
  const uint64_t n_kv = r.read<uint64_t>("metadata count");
  // A key/value takes at least 12 bytes (key length + type); a tensor info at least 24.
  if (n_kv > r.left() / 12) fail("'{}': header claims {} metadata entries, more than the file can hold", path, n_kv);
  if (n_tensors > r.left() / 24) fail("'{}': header claims {} tensors, more than the file can hold", path, n_tensors);

  kv_.reserve(std::min<uint64_t>(n_kv, 1 << 12));  // capped like array reservations
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = r.read_string("metadata key");
    if (key.empty()) fail("'{}': metadata entry {} has an empty key", path, k);
    GgufValue v;
    read_value(r, read_type(r, key), v, key, 0);
    if (kv_index_.count(key)) fail("'{}': metadata key '{}' appears twice", path, key);
    kv_index_.emplace(key, kv_.size());
    kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = find("general.alignment")) {
    if (!is_integer(a->type) || a->i <= 0 || (a->i & (a->i - 1)) != 0)
      fail("'{}': general.alignment must be a positive power of two, got {}", path, a->to_string());
    alignment_ = static_cast<uint64_t>(a->i);
  }

  tensors_.reserve(std::min<uint64_t>(n_tensors, 1 << 16));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    t.name = r.read_string("tensor name");
    if (t.name.empty()) fail("'{}': tensor {} has an empty name", path, k);
    const uint32_t n_dims = r.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims) fail("'{}': tensor '{}' has {} dimensions (1 to {} allowed)", path, t.name, n_dims, kMaxDims);
    t.n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = r.read<uint64_t>("tensor dimension");
      if (n == 0 || n > (uint64_t{1} << 40)) fail("'{}': tensor '{}' has an invalid dimension {}", path, t.name, n);
      t.dims.push_back(n);
      t.n_elements = checked_mul(t.n_elements, n, "tensor element count");
    }
    const uint32_t raw_type = r.read<uint32_t>("tensor type");
    const auto info = type_info(raw_type);
    if (!info) fail("'{}': tensor '{}' has unknown type {}", path, t.name, raw_type);
    t.type = static_cast<GgmlType>(raw_type);
    if (t.dims[0] % info->block_elems != 0)
      fail("'{}': tensor '{}' ({}) has a row of {} elements, not a multiple of the block size {}", path, t.name, info->name, t.dims[0], info->block_elems);
    t.n_bytes = checked_mul(t.n_elements / info->block_elems, info->block_bytes, "tensor size");
    t.offset = r.read<uint64_t>("tensor offset");
    if (t.offset % alignment_ != 0) fail("'{}': tensor '{}' offset {} is not a multiple of the alignment {}", path, t.name, t.offset, alignment_);
    if (tensor_index_.count(t.name)) fail("'{}': tensor '{}' appears twice", path, t.name);
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  data_offset_ = (r.pos() + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t size = file_->size();
  if (data_offset_ > size && !tensors_.empty()) fail("'{}': file is truncated: the tensor data section is missing", path);
  for (auto& t : tensors_) {
    const uint64_t begin = checked_add(data_offset_, t.offset, "tensor offset");
    const uint64_t end = checked_add(begin, t.n_bytes, "tensor end");
    if (end > size)
      fail("'{}': file is truncated: tensor '{}' needs bytes {}..{} but the file has {}", path, t.name, begin, end, size);
    t.data = file_->data() + begin;
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufValue& GgufFile::require(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) fail("'{}': required metadata key '{}' is missing", path(), key);
  return *v;
}

std::string GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::STRING) fail("'{}': metadata key '{}' is {}, expected a string", path(), key, gguf_type_name(v.type));
  return v.s;
}
std::string GgufFile::get_string(std::string_view key, std::string_view def) const {
  return has(key) ? get_string(key) : std::string(def);
}

int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!is_integer(v.type)) fail("'{}': metadata key '{}' is {}, expected an integer", path(), key, gguf_type_name(v.type));
  if (v.type == GgufValueType::U64 && v.i < 0) fail("'{}': metadata key '{}' is out of range", path(), key);
  return v.i;
}
int64_t GgufFile::get_int(std::string_view key, int64_t def) const { return has(key) ? get_int(key) : def; }

double GgufFile::get_float(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type == GgufValueType::F32 || v.type == GgufValueType::F64) return v.f;
  if (is_integer(v.type)) return static_cast<double>(v.i);
  fail("'{}': metadata key '{}' is {}, expected a number", path(), key, gguf_type_name(v.type));
}
double GgufFile::get_float(std::string_view key, double def) const { return has(key) ? get_float(key) : def; }

bool GgufFile::get_bool(std::string_view key, bool def) const {
  const GgufValue* v = find(key);
  if (!v) return def;
  if (v->type != GgufValueType::BOOL) fail("'{}': metadata key '{}' is {}, expected a bool", path(), key, gguf_type_name(v->type));
  return v->i != 0;
}

const std::vector<std::string>& GgufFile::get_string_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::ARRAY || v.elem_type != GgufValueType::STRING)
    fail("'{}': metadata key '{}' is not an array of strings", path(), key);
  return v.strings;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::ARRAY || !(is_integer(v.elem_type) || v.elem_type == GgufValueType::BOOL))
    fail("'{}': metadata key '{}' is not an array of integers", path(), key);
  return v.ints;
}

std::vector<double> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::ARRAY) fail("'{}': metadata key '{}' is not an array", path(), key);
  if (!v.floats.empty() || v.elem_type == GgufValueType::F32 || v.elem_type == GgufValueType::F64) return v.floats;
  if (is_integer(v.elem_type)) return std::vector<double>(v.ints.begin(), v.ints.end());
  fail("'{}': metadata key '{}' is not an array of numbers", path(), key);
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(std::string_view name) const {
  const GgufTensor* t = find_tensor(name);
  if (!t) fail("'{}': tensor '{}' is missing", path(), name);
  return *t;
}

}  // namespace ts
