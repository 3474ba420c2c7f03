// SHA-256 of files (OpenSSL's implementation, which uses the CPU's SHA extensions where present).
#pragma once
#include <string>

namespace ts {

std::string sha256_file(const std::string& path);  // lowercase hex

}  // namespace ts
