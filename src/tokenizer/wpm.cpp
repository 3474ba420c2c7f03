// WordPiece encoder. Unicode categories come from PCRE2 (anchored one-character matches); lowercase
// and NFD come from the generated tables in unicode_tables.cpp.
#include "tokenizer/wpm.h"

#include <algorithm>

#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"

namespace ts {

namespace {
// Capture groups, in priority order. Group 1 is Unicode White_Space (PCRE2's \s lacks U+0085).
// Group 2 is \p{C} without unassigned code points, as in llama.cpp's tables.
enum CharClass { kOther = 0, kSpace = 1, kControl = 2, kMark = 3, kPunct = 4, kSymbol = 5 };
constexpr const char* kClassPattern = R"(([\s\x{85}])|([\p{Cc}\p{Cf}\p{Co}\p{Cs}])|(\p{M})|(\p{P})|(\p{S}))";

bool is_cjk(uint32_t cp) {  // BERT's "Chinese character" ranges, as HuggingFace (and llama.cpp) define them
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}
}  // namespace

WpmEncoder::WpmEncoder(const Vocab& vocab, bool lowercase, bool strip_accents)
    : vocab_(vocab), lowercase_(lowercase), strip_accents_(strip_accents), classes_(std::make_unique<Regex>(kClassPattern)) {
  for (const std::string& t : vocab.text) max_token_len_ = std::max(max_token_len_, t.size());
}

std::vector<std::string> WpmEncoder::words(std::string_view text) const {
  std::vector<std::string> words(1);
  auto end_word = [&] {
    if (!words.back().empty()) words.emplace_back();
  };
  std::string one;  // a code point's UTF-8, for classification
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t cp = utf8_next(text, pos);
    if (strip_accents_) cp = unicode_nfd_base(cp);
    one.clear();
    utf8_append(one, cp);
    Regex::Match m;
    const int cls = classes_->find(one, 0, m, true) ? m.group : kOther;
    if (cls == kSpace) {
      end_word();
      continue;
    }
    if (cp == 0 || cp == kReplacementChar || cls == kControl) continue;
    if (strip_accents_ && cls == kMark) continue;
    if (lowercase_) {
      one.clear();
      utf8_append(one, unicode_to_lower(cp));
    }
    if (cls == kPunct || (cls == kSymbol && cp < 0x7F) || is_cjk(cp)) {
      end_word();
      words.back() = one;
      words.emplace_back();
    } else {
      words.back() += one;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void WpmEncoder::encode(std::string_view text, bool, std::vector<int32_t>& out) const {
  for (const std::string& w : words(text)) {
    const std::string word = "\xE2\x96\x81" + w;  // word-start marker; continuation pieces have none
    const size_t first = out.size();
    for (size_t i = 0; i < word.size();) {
      size_t j = std::min(word.size(), i + max_token_len_);
      int32_t id = -1;
      for (; j > i; --j) {
        id = vocab_.find(std::string_view(word).substr(i, j - i));
        if (id >= 0) break;
      }
      if (id < 0) {  // no token covers this position: the whole word is unknown
        out.resize(first);
        break;
      }
      out.push_back(id);
      i = j;
    }
    if (out.size() == first && vocab_.unk >= 0) out.push_back(vocab_.unk);
  }
}

}  // namespace ts
