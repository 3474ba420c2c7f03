#include "residency/expert_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace ts {

ExpertFiles::ExpertFiles(const std::vector<std::string>& paths, bool direct) {
  for (const std::string& p : paths) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
    if (fd < 0) {
      const int e = errno;
      for (int f : fds_) ::close(f);
      if (direct && e == EINVAL) fail("'{}': its file system does not support O_DIRECT (drop --direct-io)", p);
      fail("cannot open '{}': {}", p, std::strerror(e));
    }
    fds_.push_back(fd);
  }
}

ExpertFiles::~ExpertFiles() {
  for (int f : fds_) ::close(f);
}

}  // namespace ts
