// Text <-> token ids for every vocabulary kind the engine loads: byte-level BPE (GGUF "gpt2" and
// OpenAI tiktoken files), SentencePiece (GGUF "llama") and WordPiece (GGUF "bert"). Results match
// llama.cpp's tokenizer (and so HuggingFace's) on its test vocabularies. A Tokenizer is immutable and
// safe to use from several threads.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ts {

class GgufFile;
struct Vocab;
class TextEncoder;

class Tokenizer {
 public:
  // From GGUF metadata (tokenizer.ggml.*). Returns nullptr when the file has no vocabulary (model
  // "none" or absent): such models are token-ids-in, logits-out.
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& gguf);
  // An OpenAI .tiktoken rank file (base64 token, space, rank per line) as a byte-level BPE vocabulary;
  // `encoding` is "o200k_base" or "cl100k_base" (selects the pre-tokenizer regex); `specials` are
  // extra (text, id) control tokens, e.g. gpt-oss's Harmony tokens. Ids left unassigned between the
  // ranks and the specials decode to nothing.
  static std::unique_ptr<Tokenizer> from_tiktoken(const std::string& path, std::string_view encoding,
                                                  const std::vector<std::pair<std::string, int32_t>>& specials);
  ~Tokenizer();

  int32_t n_vocab() const;
  // add_special: apply the model's BOS/EOS rules; parse_special: recognise control-token texts (e.g.
  // "<|im_start|>") in `text` and emit their ids. User-defined tokens are always recognised, as in
  // llama.cpp and HuggingFace.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // The raw bytes the token stands for; special/control tokens give their text.
  std::string token_bytes(int32_t id) const;
  // Concatenated bytes (may be invalid UTF-8 when cut mid-character).
  std::string decode(const std::vector<int32_t>& ids) const;
  int32_t bos() const;  // -1 when the vocabulary has none
  int32_t eos() const;
  bool add_bos() const;
  bool is_eog(int32_t id) const;      // ends generation (eos, eot, eom, end-of-turn markers)
  bool is_special(int32_t id) const;  // control or user-defined token
  std::optional<int32_t> find_token(std::string_view text) const;  // exact token text lookup

 private:
  Tokenizer(std::unique_ptr<Vocab> vocab, std::unique_ptr<TextEncoder> encoder);
  void check_id(int32_t id) const;

  std::unique_ptr<Vocab> vocab_;
  std::unique_ptr<TextEncoder> encoder_;
};

// Streaming detokenizer: feed generated ids one at a time, get text that is always complete, valid
// UTF-8. Bytes of an unfinished character are held back until it completes; invalid bytes become
// U+FFFD; flush() emits what is left (an incomplete sequence becomes U+FFFD).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok) : tok_(tok) {}
  std::string push(int32_t id);
  std::string flush();

 private:
  const Tokenizer& tok_;
  std::string pending_;
};

}  // namespace ts
