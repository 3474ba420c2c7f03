// Streams a GGUF v3 file to disk: declare metadata and tensors, then write each tensor's bytes in
// declaration order, in as many pieces as the caller likes (a 12 GB model is never held in memory).
// The output follows util/output_file.h: a regular file is written under a temporary name and renamed
// on finish(), so a failed or interrupted write never leaves a truncated model behind under the
// requested name; a device, a FIFO or "-" (stdout) is written in place, as a stream.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "util/output_file.h"

namespace ts {

class GgufWriter {
 public:
  explicit GgufWriter(std::string path, uint64_t alignment = 32, const OutputOptions& out = {});
  ~GgufWriter();  // removes the temporary file if finish() was not reached

  void set(const std::string& key, GgufValue v);
  void set_string(const std::string& key, const std::string& s);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string_array(const std::string& key, std::vector<std::string> v);
  void set_i32_array(const std::string& key, std::vector<int64_t> v);
  void set_f32_array(const std::string& key, std::vector<double> v);

  // dims in ggml order (dims[0] is the row length).
  void add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims);

  // Writes the header; afterwards only tensor bytes may be written.
  void begin_data();
  // Appends bytes of the current tensor; moves to the next once a tensor is complete.
  void write(const void* data, size_t n);
  // Checks every tensor was written in full, flushes, and renames into place.
  void finish();

  uint64_t data_bytes() const { return data_bytes_; }  // known after the last add_tensor
  uint64_t written_bytes() const { return written_; }  // header included

 private:
  void put(const void* p, size_t n);
  void put_string(const std::string& s);
  void put_value(const GgufValue& v, bool with_type);
  void pad_to_alignment();

  std::string path_;
  uint64_t alignment_;
  OutputOptions out_options_;
  std::unique_ptr<OutputFile> out_;  // opened by begin_data()
  std::vector<std::pair<std::string, GgufValue>> kv_;
  struct Planned {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    uint64_t offset, n_bytes;
  };
  std::vector<Planned> tensors_;
  uint64_t data_bytes_ = 0;
  size_t current_ = 0;
  uint64_t current_written_ = 0;
  uint64_t written_ = 0;
  bool in_data_ = false;
};

}  // namespace ts
