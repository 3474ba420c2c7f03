// gpt-oss's "o200k_harmony" vocabulary: o200k_base plus the Harmony chat-format special tokens and
// reserved tokens up to id 201087 (201088 ids). Shared by the tokenizer tests and the gpt-oss tests.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ts {

// (text, id) of every Harmony special token: the named ones and <|reserved_N|> (N = id) for the rest
// of ids 200000..201087.
std::vector<std::pair<std::string, int32_t>> harmony_special_tokens();

// `o200k_base_path`: the o200k_base.tiktoken rank file.
std::unique_ptr<Tokenizer> harmony_from_tiktoken(const std::string& o200k_base_path);

}  // namespace ts
