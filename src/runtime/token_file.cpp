#include "runtime/token_file.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "util/error.h"

namespace ts {

std::vector<int32_t> read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open token file '{}': {}", path, std::strerror(errno));
  std::vector<int32_t> ids;
  std::string line;
  for (int64_t lineno = 1; std::getline(in, line); ++lineno) {
    const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    int64_t v = 0;
    const char* first = line.data() + b;
    const char* last = line.data() + e + 1;
    const auto r = std::from_chars(first, last, v);
    if (r.ec != std::errc() || r.ptr != last || v < 0 || v > INT32_MAX)
      fail("token file '{}', line {}: '{}' is not a token id", path, lineno, line.substr(b, e - b + 1));
    ids.push_back(static_cast<int32_t>(v));
  }
  if (in.bad()) fail("cannot read token file '{}'", path);
  if (ids.empty()) fail("token file '{}' holds no token ids", path);
  return ids;
}

}  // namespace ts
