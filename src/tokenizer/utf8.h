// UTF-8 helpers shared by the tokenizers and the streaming detokenizer. Invalid input is never an
// error here: model output can stop mid-character, and user text may be arbitrary bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ts {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the sequence a lead byte announces (1 for continuation and invalid bytes, so that
// byte-wise scanning always advances). Matches how SentencePiece and llama.cpp split characters.
size_t utf8_seq_len(unsigned char lead);

// Decodes the code point at `pos` and advances past it. A maximal invalid subpart (Unicode's
// definition, as Python's errors="replace") yields U+FFFD. If `complete` is non-null it is set to
// false when the bytes at `pos` are a valid but truncated prefix running into the end of `s`.
uint32_t utf8_next(std::string_view s, size_t& pos, bool* complete = nullptr);

void utf8_append(std::string& out, uint32_t cp);

// Valid UTF-8 copy of `s` with every invalid subpart replaced by U+FFFD. When `hold_incomplete` is
// set, a truncated sequence at the very end is not emitted; `consumed` tells how far the copy got.
std::string utf8_sanitize(std::string_view s, bool hold_incomplete = false, size_t* consumed = nullptr);

bool utf8_is_valid(std::string_view s);

}  // namespace ts
