// Splits input text at special-token texts before the model's algorithm sees it, as llama.cpp's
// tokenizer_st_partition: tokens are tried longest text first; control and unknown tokens only when
// parse_special is set, user-defined tokens always (HuggingFace treats them as added tokens).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace ts {

struct Fragment {
  std::string_view text;  // plain text when token < 0
  int32_t token = -1;
};

std::vector<Fragment> split_special_tokens(std::string_view text, const Vocab& vocab, bool parse_special);

}  // namespace ts
