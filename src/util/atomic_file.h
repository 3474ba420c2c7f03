// Writes a whole file under a temporary name and renames it into place, so a failed write never
// leaves a truncated file where the user expects a complete one (or destroys the old one).
#pragma once
#include <cstddef>
#include <string>

namespace ts {

void write_file_atomically(const std::string& path, const void* data, size_t n);

}  // namespace ts
