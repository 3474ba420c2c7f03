#include "util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace ts {

std::string file_kind(uint32_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

RegularFile open_regular_file(const std::string& path, const char* what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check below refuses it anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("cannot open {} '{}': {}", what, path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail("cannot stat {} '{}': {}", what, path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{} '{}' is {}, not a regular file", what, path, file_kind(st.st_mode));
  }
  // Reads of a regular file never block, but later users of the descriptor should see plain flags.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return {fd, static_cast<uint64_t>(st.st_size)};
}

std::string read_regular_file(const std::string& path, const char* what) {
  const RegularFile f = open_regular_file(path, what);
  std::string data;
  data.resize(f.size);
  size_t got = 0;
  int err = 0;
  // Read to the end rather than trusting st_size: a file that changes while it is read still
  // yields what was there.
  for (;;) {
    if (got == data.size()) data.resize(data.size() + 4096);
    const ssize_t n = ::read(f.fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(f.fd);
  if (err) fail("cannot read {} '{}': {}", what, path, std::strerror(err));
  data.resize(got);
  return data;
}

}  // namespace ts
