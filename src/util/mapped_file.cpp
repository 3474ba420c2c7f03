#include "util/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/input_file.h"

namespace ts {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const RegularFile f = open_regular_file(path, "GGUF file");
  size_ = static_cast<size_t>(f.size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(f.fd);
      fail("cannot map '{}': {}", path, std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(f.fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace ts
