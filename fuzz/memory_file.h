// The fuzzed bytes as a path, for loaders that take one (they map or read files): an anonymous
// in-memory file (memfd), never the disk. It is a regular file to fstat, like a model on disk.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ts::fuzz {

class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t n) : fd_(::memfd_create("fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error("memfd_create failed");
    for (size_t done = 0; done < n;) {
      const ssize_t w = ::write(fd_, data + done, n - done);
      if (w <= 0) throw std::runtime_error("writing the memfd failed");
      done += static_cast<size_t>(w);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace ts::fuzz
