// Special-token splitting. Each pass cuts the remaining plain fragments at one token's occurrences;
// lstrip/rstrip tokens also swallow the ASCII whitespace before/after them.
#include "tokenizer/special_split.h"

#include <cctype>

namespace ts {

namespace {
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
}  // namespace

std::vector<Fragment> split_special_tokens(std::string_view text, const Vocab& vocab, bool parse_special) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({text});
  std::vector<Fragment> next;
  for (const int32_t id : vocab.split_specials) {
    if (!parse_special && vocab.attr[id] != TokenAttr::UserDefined) continue;
    const std::string_view special = vocab.text[id];
    if (special.empty()) continue;
    next.clear();
    bool found = false;
    for (const Fragment& f : frags) {
      if (f.token >= 0 || f.text.find(special) == std::string_view::npos) {
        next.push_back(f);
        continue;
      }
      found = true;
      std::string_view rest = f.text;
      for (size_t at; (at = rest.find(special)) != std::string_view::npos;) {
        std::string_view left = rest.substr(0, at);
        if (vocab.lstrip[id])
          while (!left.empty() && is_space(left.back())) left.remove_suffix(1);
        if (!left.empty()) next.push_back({left});
        next.push_back({special, id});
        rest = rest.substr(at + special.size());
        if (vocab.rstrip[id])
          while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
      }
      if (!rest.empty()) next.push_back({rest});
    }
    if (found) frags.swap(next);
  }
  return frags;
}

}  // namespace ts
