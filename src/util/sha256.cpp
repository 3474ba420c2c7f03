#include "util/sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "util/error.h"
#include "util/input_file.h"

namespace ts {

std::string sha256_file(const std::string& path) {
  const RegularFile f = open_regular_file(path, "file");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    ::close(f.fd);
    fail("SHA-256 is unavailable");
  }
  std::vector<unsigned char> buf(1 << 20);
  ssize_t n;
  while ((n = ::read(f.fd, buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n));
  const int err = n < 0 ? errno : 0;
  ::close(f.fd);
  if (err) fail("cannot read '{}': {}", path, std::strerror(err));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  std::string hex;
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

}  // namespace ts

namespace ts {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
    fail("SHA-256 is unavailable");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(const void* data, size_t n) { EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n); }

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
  std::string h;
  for (unsigned i = 0; i < len; ++i) h += fmt::format("{:02x}", md[i]);
  return h;
}

}  // namespace ts
