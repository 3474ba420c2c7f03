// SentencePiece-style BPE (GGUF "llama" model: Llama 1/2, Phi-3, Gemma): spaces become U+2581, an
// optional space prefix is added, characters are merged by the highest-scoring token their pair
// forms, and characters no token covers fall back to <0xXX> byte tokens (or the unknown token).
#pragma once
#include <array>

#include "tokenizer/text_encoder.h"
#include "tokenizer/vocab.h"

namespace ts {

class SpmEncoder : public TextEncoder {
 public:
  SpmEncoder(const Vocab& vocab, bool add_space_prefix);
  void encode(std::string_view text, bool after_special, std::vector<int32_t>& out) const override;

 private:
  const Vocab& vocab_;
  bool add_space_prefix_;
  std::array<int32_t, 256> byte_token_;  // <0xXX> tokens, -1 when absent
};

}  // namespace ts
