#include "gguf/gguf_writer.h"

#include "util/error.h"

namespace ts {

GgufWriter::GgufWriter(std::string path, uint64_t alignment, const OutputOptions& out)
    : path_(std::move(path)), alignment_(alignment), out_options_(out) {
  if (alignment == 0 || (alignment & (alignment - 1))) fail("GGUF alignment must be a power of two");
  if (alignment != 32) set_u32("general.alignment", static_cast<uint32_t>(alignment));
}

GgufWriter::~GgufWriter() = default;

void GgufWriter::set(const std::string& key, GgufValue v) {
  if (in_data_) fail("internal error: GGUF metadata set after the header was written");
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  kv_.emplace_back(key, std::move(v));
}

void GgufWriter::set_string(const std::string& key, const std::string& s) {
  GgufValue v;
  v.type = GgufValueType::STRING;
  v.s = s;
  set(key, std::move(v));
}
void GgufWriter::set_u32(const std::string& key, uint32_t x) {
  GgufValue v;
  v.type = GgufValueType::U32;
  v.i = x;
  set(key, std::move(v));
}
void GgufWriter::set_i32(const std::string& key, int32_t x) {
  GgufValue v;
  v.type = GgufValueType::I32;
  v.i = x;
  set(key, std::move(v));
}
void GgufWriter::set_u64(const std::string& key, uint64_t x) {
  GgufValue v;
  v.type = GgufValueType::U64;
  v.i = static_cast<int64_t>(x);
  set(key, std::move(v));
}
void GgufWriter::set_f32(const std::string& key, float x) {
  GgufValue v;
  v.type = GgufValueType::F32;
  v.f = x;
  set(key, std::move(v));
}
void GgufWriter::set_bool(const std::string& key, bool x) {
  GgufValue v;
  v.type = GgufValueType::BOOL;
  v.i = x;
  set(key, std::move(v));
}
void GgufWriter::set_string_array(const std::string& key, std::vector<std::string> a) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.elem_type = GgufValueType::STRING;
  v.strings = std::move(a);
  set(key, std::move(v));
}
void GgufWriter::set_i32_array(const std::string& key, std::vector<int64_t> a) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.elem_type = GgufValueType::I32;
  v.ints = std::move(a);
  set(key, std::move(v));
}
void GgufWriter::set_f32_array(const std::string& key, std::vector<double> a) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.elem_type = GgufValueType::F32;
  v.floats = std::move(a);
  set(key, std::move(v));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims) {
  if (in_data_) fail("internal error: tensor added after the header was written");
  const TypeInfo& ti = type_info(type);
  if (dims.empty() || dims.size() > 4) fail("tensor '{}': 1 to 4 dimensions allowed", name);
  if (dims[0] % ti.block_elems) fail("tensor '{}': row of {} is not a multiple of {}'s block size {}", name, dims[0], ti.name, ti.block_elems);
  uint64_t n = 1;
  for (uint64_t d : dims) {
    if (d == 0) fail("tensor '{}': a dimension of 0 (GGUF readers reject empty tensors)", name);
    n = checked_mul(n, d, "tensor size");
  }
  const uint64_t bytes = n / ti.block_elems * ti.block_bytes;
  tensors_.push_back({name, type, std::move(dims), data_bytes_, bytes});
  data_bytes_ = (data_bytes_ + bytes + alignment_ - 1) / alignment_ * alignment_;
}

void GgufWriter::put(const void* p, size_t n) {
  out_->write(p, n);
  written_ += n;
}

void GgufWriter::put_string(const std::string& s) {
  const uint64_t n = s.size();
  put(&n, 8);
  put(s.data(), s.size());
}

void GgufWriter::put_value(const GgufValue& v, bool with_type) {
  if (with_type) {
    const uint32_t t = static_cast<uint32_t>(v.type);
    put(&t, 4);
  }
  auto put_int = [&](GgufValueType t, int64_t i) {
    switch (t) {
      case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::BOOL: { uint8_t x = static_cast<uint8_t>(i); put(&x, 1); break; }
      case GgufValueType::U16: case GgufValueType::I16: { uint16_t x = static_cast<uint16_t>(i); put(&x, 2); break; }
      case GgufValueType::U32: case GgufValueType::I32: { uint32_t x = static_cast<uint32_t>(i); put(&x, 4); break; }
      default: put(&i, 8);
    }
  };
  auto put_float = [&](GgufValueType t, double f) {
    if (t == GgufValueType::F32) {
      float x = static_cast<float>(f);
      put(&x, 4);
    } else {
      put(&f, 8);
    }
  };
  switch (v.type) {
    case GgufValueType::STRING: put_string(v.s); break;
    case GgufValueType::F32: case GgufValueType::F64: put_float(v.type, v.f); break;
    case GgufValueType::ARRAY: {
      const uint32_t et = static_cast<uint32_t>(v.elem_type);
      const uint64_t n = v.array_size();
      put(&et, 4);
      put(&n, 8);
      for (const auto& s : v.strings) put_string(s);
      for (double f : v.floats) put_float(v.elem_type, f);
      for (int64_t i : v.ints) put_int(v.elem_type, i);
      for (const auto& a : v.arrays) put_value(a, false);
      break;
    }
    default: put_int(v.type, v.i);
  }
}

void GgufWriter::begin_data() {
  out_ = std::make_unique<OutputFile>(path_, out_options_);
  in_data_ = true;
  const uint32_t magic = 0x46554747, version = 3;
  const uint64_t nt = tensors_.size(), nkv = kv_.size();
  put(&magic, 4);
  put(&version, 4);
  put(&nt, 8);
  put(&nkv, 8);
  for (const auto& [k, v] : kv_) {
    put_string(k);
    put_value(v, true);
  }
  for (const auto& t : tensors_) {
    put_string(t.name);
    const uint32_t nd = static_cast<uint32_t>(t.dims.size()), ty = static_cast<uint32_t>(t.type);
    put(&nd, 4);
    for (uint64_t d : t.dims) put(&d, 8);
    put(&ty, 4);
    put(&t.offset, 8);
  }
  pad_to_alignment();
}

void GgufWriter::pad_to_alignment() {
  static const char zeros[4096] = {};
  uint64_t pad = (alignment_ - written_ % alignment_) % alignment_;
  while (pad) {
    const size_t k = std::min<uint64_t>(pad, sizeof zeros);
    put(zeros, k);
    pad -= k;
  }
}

void GgufWriter::write(const void* data, size_t n) {
  if (!in_data_) fail("internal error: tensor data written before the header");
  const auto* p = static_cast<const uint8_t*>(data);
  while (n) {
    if (current_ >= tensors_.size()) fail("internal error: more tensor data than declared");
    const Planned& t = tensors_[current_];
    const size_t k = std::min<uint64_t>(n, t.n_bytes - current_written_);
    put(p, k);
    p += k;
    n -= k;
    current_written_ += k;
    if (current_written_ == t.n_bytes) {
      pad_to_alignment();
      ++current_;
      current_written_ = 0;
    }
  }
}

void GgufWriter::finish() {
  if (!in_data_) begin_data();
  if (current_ != tensors_.size()) fail("internal error: tensor '{}' was not written in full", tensors_[current_].name);
  out_->commit();
}


}  // namespace ts
