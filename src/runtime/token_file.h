// Token-id files: one non-negative integer per line (blank lines ignored). Anything else is an
// error naming the line, so a typo never silently shifts the teacher-forced sequence.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ts {

std::vector<int32_t> read_token_file(const std::string& path);

}  // namespace ts
