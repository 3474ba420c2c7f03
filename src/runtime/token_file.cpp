#include "runtime/token_file.h"

#include <charconv>
#include <string_view>

#include "util/error.h"
#include "util/input_file.h"

namespace ts {

std::vector<int32_t> parse_token_ids(std::string_view text, const std::string& name) {
  std::vector<int32_t> ids;
  int64_t lineno = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++lineno;
    const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string_view::npos) continue;
    int64_t v = 0;
    const char* first = line.data() + b;
    const char* last = line.data() + e + 1;
    const auto r = std::from_chars(first, last, v);
    if (r.ec != std::errc() || r.ptr != last || v < 0 || v > INT32_MAX)
      fail("token file '{}', line {}: '{}' is not a token id", name, lineno, line.substr(b, std::min<size_t>(e - b + 1, 80)));
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) fail("token file '{}' holds no token ids", name);
  return ids;
}

std::vector<int32_t> read_token_file(const std::string& path) {
  return parse_token_ids(read_regular_file(path, "token file"), path);
}

}  // namespace ts
