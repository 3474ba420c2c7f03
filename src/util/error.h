// Errors the user can act on. Every failure that reaches the CLI is a ts::Error with a message that
// names the file, tensor or option at fault; the CLI prints it and exits non-zero.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace ts {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// Checked arithmetic for sizes that come from files: a hostile count must not wrap around.
inline uint64_t checked_mul(uint64_t a, uint64_t b, const char* what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail("{}: size overflows 64 bits", what);
  return r;
}
inline uint64_t checked_add(uint64_t a, uint64_t b, const char* what) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail("{}: size overflows 64 bits", what);
  return r;
}

}  // namespace ts
