// The Harmony token table, as in OpenAI's tiktoken "o200k_harmony" encoding.
#include "tokenizer/harmony_vocab.h"

#include <fmt/format.h>

#include <map>

namespace ts {

std::vector<std::pair<std::string, int32_t>> harmony_special_tokens() {
  static const std::map<int32_t, const char*> kNamed = {
      {199998, "<|startoftext|>"}, {199999, "<|endoftext|>"}, {200002, "<|return|>"},  {200003, "<|constrain|>"},
      {200005, "<|channel|>"},     {200006, "<|start|>"},     {200007, "<|end|>"},     {200008, "<|message|>"},
      {200012, "<|call|>"},        {200018, "<|endofprompt|>"},
  };
  std::vector<std::pair<std::string, int32_t>> out;
  for (const auto& [id, text] : kNamed) out.emplace_back(text, id);
  for (int32_t id = 200000; id < 201088; ++id)
    if (!kNamed.count(id)) out.emplace_back(fmt::format("<|reserved_{}|>", id), id);
  return out;
}

std::unique_ptr<Tokenizer> harmony_from_tiktoken(const std::string& o200k_base_path) {
  return Tokenizer::from_tiktoken(o200k_base_path, "o200k_base", harmony_special_tokens());
}

}  // namespace ts
