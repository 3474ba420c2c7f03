// What the tokenizer targets do with a vocabulary they managed to load: encode a fixed text that
// mixes scripts, whitespace runs, digits and special-token spellings (with and without parsing
// specials and BOS/EOS rules), decode the result whole and streamed, and look up a few tokens.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ts::fuzz {

inline void exercise(const Tokenizer& tok) {
  static const char* const kTexts[] = {
      "Hello, world! 123 4567 ñandú 日本語 🤖\n\n\t  x",
      "<|im_start|>user\nHi<|im_end|>\n<s>[INST] a </s><|endoftext|><|start|>",
      "   leading and trailing   ",
      "",
  };
  for (const char* text : kTexts)
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = tok.encode(text, special, special);
      tok.decode(ids);
      StreamDecoder stream(tok);
      for (int32_t id : ids) stream.push(id);
      stream.flush();
      for (int32_t id : ids) {
        tok.is_eog(id);
        tok.is_special(id);
      }
    }
  const int32_t n = tok.n_vocab();
  if (n > 0) {
    tok.token_bytes(0);
    tok.token_bytes(n - 1);
  }
  tok.find_token("<s>");
}

}  // namespace ts::fuzz
