#include "util/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace ts {

void write_file_atomically(const std::string& path, const void* data, size_t n) {
  const std::string tmp = path + ".partial";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail("cannot create '{}': {}", tmp, std::strerror(errno));
  const bool ok = std::fwrite(data, 1, n, f) == n;
  const int e = errno;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    fail("cannot write '{}': {}", path, std::strerror(ok ? errno : e));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int re = errno;
    std::remove(tmp.c_str());
    fail("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(re));
  }
}

}  // namespace ts
