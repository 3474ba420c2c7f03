// Lookups into the generated Unicode run tables (both sorted by first code point).
#include <algorithm>

#include "tokenizer/unicode_tables.h"

namespace ts {

template <typename Run>
static const Run* find_run(const Run* runs, size_t n, uint32_t cp) {
  const Run* end = runs + n;
  const Run* it = std::upper_bound(runs, end, cp, [](uint32_t c, const Run& r) { return c < r.first; });
  if (it == runs) return nullptr;
  --it;
  return cp <= it->last ? it : nullptr;
}

uint32_t unicode_to_lower(uint32_t cp) {
  using namespace unicode_tables;
  const LowerRun* r = find_run(kLower, kLowerCount, cp);
  if (!r || (cp - r->first) % r->stride != 0) return cp;
  return static_cast<uint32_t>(static_cast<int64_t>(cp) + r->delta);
}

uint32_t unicode_nfd_base(uint32_t cp) {
  using namespace unicode_tables;
  const NfdRun* r = find_run(kNfd, kNfdCount, cp);
  return r ? r->base : cp;
}

}  // namespace ts
