// The vocabulary every tokenizer algorithm and the detokenizer read: token texts, what each token
// decodes to, per-token attributes, and the special-token ids and BOS/EOS rules. Built by the GGUF
// and tiktoken loaders; immutable afterwards.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ts {

// GGUF token types (tokenizer.ggml.token_type), same numbering.
enum class TokenAttr : uint8_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct Vocab {
  std::vector<std::string> text;   // as stored in the vocabulary (SPM: "▁" for space; GPT-2: byte-mapped)
  std::vector<std::string> bytes;  // what the token stands for in decoded output
  std::vector<float> score;        // SentencePiece merge priority (empty for other models)
  std::vector<TokenAttr> attr;
  std::vector<uint8_t> rstrip, lstrip;  // special-token splitting eats whitespace after / before the token
  TokenIndex by_text;  // text -> id; on duplicates the higher id wins, as in llama.cpp

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1, pad = -1;
  bool add_bos = false, add_eos = false, add_sep = false;

  std::vector<uint8_t> eog;              // per id: ends generation
  std::vector<int32_t> split_specials;   // special tokens in the order the splitter tries them

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  bool is_special(int32_t id) const { return attr[id] == TokenAttr::Control || attr[id] == TokenAttr::UserDefined; }
  int32_t find(std::string_view t) const {
    const auto it = by_text.find(t);
    return it == by_text.end() ? -1 : it->second;
  }

  // Adds a token (ids are consecutive); `bytes` defaults to the text.
  void add(std::string text, TokenAttr attr, float score = 0);
  // After all tokens and ids are known: end-of-generation set and special-token split order.
  void finish();
};

}  // namespace ts
