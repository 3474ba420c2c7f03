// SHA-256 of files (OpenSSL's implementation, which uses the CPU's SHA extensions where present).
#pragma once
#include <cstddef>
#include <string>

namespace ts {

std::string sha256_file(const std::string& path);  // lowercase hex

}  // namespace ts

namespace ts {

// Incremental SHA-256, for hashing a file while it is being written.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string hex();  // finishes the digest; call once

 private:
  void* ctx_;  // EVP_MD_CTX
};

}  // namespace ts
