// Pre-tokenizers of byte-level BPE vocabularies: the regex sequence that cuts text into pieces before
// the merges run, selected by GGUF's tokenizer.ggml.pre (or by the tiktoken encoding name). The
// patterns are those of the models' tokenizer.json / tiktoken, as listed in llama.cpp's
// llama-vocab.cpp; PCRE2 runs them as written (Unicode classes, lookahead, case-insensitive groups).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace ts {

struct PreTokenizer {
  std::vector<std::unique_ptr<Regex>> patterns;
  bool ignore_merges = false;  // a piece that is itself a token is emitted whole (llama3, tiktoken)
  bool add_bos = false;        // the vocabulary's BOS rule when the GGUF does not state one (llama3)

  // ts::Error naming `name` when it is not a known pre-tokenizer.
  static std::unique_ptr<PreTokenizer> by_name(std::string_view name);

  void split(std::string_view text, std::vector<std::string_view>& pieces) const { regex_split(text, patterns, pieces); }
};

}  // namespace ts
