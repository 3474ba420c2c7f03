// WordPiece (GGUF "bert" model), following llama.cpp's BERT preprocessing: NFD + accent stripping and
// lowercasing (unless the GGUF says otherwise), control characters dropped, words split at
// whitespace, and every punctuation mark, ASCII symbol and CJK ideograph made a word of its own. Each
// word, with a U+2581 word-start marker, is then covered greedily by the longest tokens; a word that
// cannot be covered becomes the unknown token.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/text_encoder.h"
#include "tokenizer/vocab.h"

namespace ts {

class WpmEncoder : public TextEncoder {
 public:
  WpmEncoder(const Vocab& vocab, bool lowercase, bool strip_accents);
  void encode(std::string_view text, bool after_special, std::vector<int32_t>& out) const override;

 private:
  std::vector<std::string> words(std::string_view text) const;

  const Vocab& vocab_;
  bool lowercase_, strip_accents_;
  size_t max_token_len_ = 0;
  // Classifies one code point by the capture group that matches it (see wpm.cpp).
  std::unique_ptr<Regex> classes_;
};

}  // namespace ts
