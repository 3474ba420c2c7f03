// The mapping: printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100.. in order.
#include "tokenizer/byte_unicode.h"

#include <array>

#include "tokenizer/utf8.h"

namespace ts {

namespace {
constexpr uint32_t kMaxMapped = 0x100 + 68;

std::array<int16_t, kMaxMapped> build_reverse() {
  std::array<int16_t, kMaxMapped> rev{};
  rev.fill(-1);
  uint32_t next = 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    rev[printable ? b : next++] = static_cast<int16_t>(b);
  }
  return rev;
}
}  // namespace

std::optional<std::string> gpt2_unicode_to_bytes(std::string_view mapped) {
  static const std::array<int16_t, kMaxMapped> rev = build_reverse();
  std::string out;
  out.reserve(mapped.size());
  size_t pos = 0;
  while (pos < mapped.size()) {
    const uint32_t cp = utf8_next(mapped, pos);  // invalid UTF-8 gives U+FFFD, which is unmapped
    if (cp >= kMaxMapped || rev[cp] < 0) return std::nullopt;
    out += static_cast<char>(rev[cp]);
  }
  return out;
}

}  // namespace ts
