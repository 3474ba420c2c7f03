// A compiled PCRE2 pattern in UTF + Unicode-property mode (\p{L}, \s etc. are Unicode-aware), JIT
// compiled. Invalid UTF-8 in the subject never matches instead of failing the whole search, so
// arbitrary bytes can be tokenized. Thread-safe: matching state lives in the caller's MatchScratch.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

class Regex {
 public:
  explicit Regex(const std::string& pattern);  // ts::Error naming the pattern when it does not compile
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  struct Match { size_t begin, end; int group; };  // group: the first capture group that took part, or 0
  // Next match at or after `from` (or exactly at `from` if `anchored`); false when there is none.
  bool find(std::string_view subject, size_t from, Match& m, bool anchored = false) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits `text` with each pattern in turn, as HuggingFace's Split pre-tokenizer with "Isolated"
// behaviour does: every match and every gap between matches becomes its own piece.
void regex_split(std::string_view text, const std::vector<std::unique_ptr<Regex>>& patterns,
                 std::vector<std::string_view>& pieces);

}  // namespace ts
