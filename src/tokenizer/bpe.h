// Byte-level BPE: the pre-tokenizer cuts the text into pieces, then each piece starts as single bytes
// and the best-ranked adjacent pair is merged until none is left. GGUF vocabularies rank explicit
// merge pairs by their order in tokenizer.ggml.merges; tiktoken files rank by the merged token's
// rank (= id). Both run on raw bytes: the GPT-2 byte mapping is undone when the vocabulary loads.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/text_encoder.h"
#include "tokenizer/vocab.h"

namespace ts {

class BpeEncoder : public TextEncoder {
 public:
  // GGUF: `merges` are "left right" in GPT-2-mapped form, best first; `vocab.bytes` holds raw bytes.
  BpeEncoder(const Vocab& vocab, std::unique_ptr<PreTokenizer> pre, const std::vector<std::string>& merges);
  // tiktoken: the normal tokens are ids [0, n_ranked); a merge's rank is the merged token's id.
  BpeEncoder(const Vocab& vocab, std::unique_ptr<PreTokenizer> pre, int32_t n_ranked);

  void encode(std::string_view text, bool after_special, std::vector<int32_t>& out) const override;

 private:
  struct Symbol { uint32_t start, len; int32_t id; int32_t prev, next; };
  struct Merge { int32_t rank, id; };
  bool find_merge(std::string_view piece, const Symbol& l, const Symbol& r, Merge& m) const;
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
  void index_bytes();

  std::unique_ptr<PreTokenizer> pre_;
  TokenIndex by_bytes_;                               // raw bytes -> id
  std::array<int32_t, 256> byte_id_;                  // single-byte tokens, -1 if missing
  std::unordered_map<uint64_t, Merge> pair_merges_;   // GGUF: (left id, right id) -> merge
  bool rank_by_concat_;                               // tiktoken ranking
};

}  // namespace ts
