// Opening a file the user named as an input. The type is checked on a descriptor opened with
// O_NONBLOCK, before anything is read: opening a FIFO for reading blocks until a writer appears
// (`inspect FIFO` used to hang forever), and a character device such as /dev/zero never ends. Only
// regular files are inputs; anything else is an error that says what the path is.
#pragma once
#include <cstdint>
#include <string>

namespace ts {

// "a directory", "a FIFO (named pipe)", "a character device", ... for an st_mode.
std::string file_kind(uint32_t st_mode);

// A read-only descriptor of the regular file at `path` (close it with ::close), and its size.
// `what` names the input in messages ("model", "token file").
struct RegularFile {
  int fd = -1;
  uint64_t size = 0;
};
RegularFile open_regular_file(const std::string& path, const char* what);

// The whole content of the regular file at `path`.
std::string read_regular_file(const std::string& path, const char* what);

}  // namespace ts
