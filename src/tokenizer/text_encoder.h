// The algorithm-specific part of encoding: turns one stretch of plain text (special tokens already
// split off) into ids. One implementation per vocabulary kind.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace ts {

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  // `after_special`: the text starts the input or follows a special token (SentencePiece adds its
  // space prefix only there).
  virtual void encode(std::string_view text, bool after_special, std::vector<int32_t>& out) const = 0;
};

}  // namespace ts
