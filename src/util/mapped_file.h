// A read-only memory map of a whole regular file (anything else is refused before it is read, see
// util/input_file.h). Models are mapped, never copied: the OS decides what stays resident, which is
// what lets a later residency mode stream experts that do not fit in RAM.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ts {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ts
