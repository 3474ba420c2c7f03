// Token-id files: one non-negative integer per line (blank lines ignored). Anything else is an
// error naming the line, so a typo never silently shifts the teacher-forced sequence.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

// Reads a regular file (a FIFO or a device is refused before it is opened for reading).
std::vector<int32_t> read_token_file(const std::string& path);
// The parser itself; `name` names the input in messages.
std::vector<int32_t> parse_token_ids(std::string_view text, const std::string& name);

}  // namespace ts
