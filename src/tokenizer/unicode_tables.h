// Unicode mappings for WordPiece preprocessing, generated from the Unicode database by
// gen_unicode_tables.py (PCRE2 classifies code points but cannot lowercase or decompose them).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ts {

uint32_t unicode_to_lower(uint32_t cp);  // simple lowercase mapping; cp itself when it has none
uint32_t unicode_nfd_base(uint32_t cp);  // first code point of cp's canonical decomposition

namespace unicode_tables {
// first..last step `stride`: lowercase is cp + delta.
struct LowerRun { uint32_t first, last, stride; int32_t delta; };
// first..last (consecutive) all decompose to `base` followed by combining marks.
struct NfdRun { uint32_t first, last, base; };
extern const LowerRun kLower[];
extern const size_t kLowerCount;
extern const NfdRun kNfd[];
extern const size_t kNfdCount;
}  // namespace unicode_tables

}  // namespace ts
