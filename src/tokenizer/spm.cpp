// The SentencePiece merge loop, as llama.cpp's llm_tokenizer_spm: symbols are UTF-8 characters in a
// linked list; a max-heap holds adjacent pairs whose concatenation is a token, by token score (ties:
// leftmost first). Every merged symbol is a token, so only unmerged characters need the byte fallback.
#include "tokenizer/spm.h"

#include <fmt/format.h>

#include <queue>

#include "tokenizer/utf8.h"

namespace ts {

SpmEncoder::SpmEncoder(const Vocab& vocab, bool add_space_prefix) : vocab_(vocab), add_space_prefix_(add_space_prefix) {
  for (int b = 0; b < 256; ++b) byte_token_[b] = vocab.find(fmt::format("<0x{:02X}>", b));
}

void SpmEncoder::encode(std::string_view raw, bool after_special, std::vector<int32_t>& out) const {
  static constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581
  std::string text;
  text.reserve(raw.size() + 8);
  if (add_space_prefix_ && after_special) text += kSpace;
  for (char c : raw) {
    if (c == ' ') text += kSpace;
    else text += c;
  }

  struct Symbol { uint32_t start, len; int32_t prev, next; };
  std::vector<Symbol> sym;
  for (size_t off = 0; off < text.size();) {
    const size_t n = std::min(utf8_seq_len(static_cast<unsigned char>(text[off])), text.size() - off);
    sym.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(n), static_cast<int32_t>(sym.size()) - 1, -1});
    off += n;
    if (off < text.size()) sym.back().next = static_cast<int32_t>(sym.size());
  }
  if (sym.empty()) return;

  struct Candidate {
    float score;
    int32_t left, right;
    uint32_t size;
    bool operator<(const Candidate& o) const { return score != o.score ? score < o.score : left > o.left; }
  };
  std::priority_queue<Candidate> heap;
  const std::string_view tv(text);
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t size = sym[l].len + sym[r].len;
    const int32_t id = vocab_.find(tv.substr(sym[l].start, size));
    if (id >= 0) heap.push({vocab_.score[id], l, r, size});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) consider(i - 1, i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[c.left];
    Symbol& r = sym[c.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != c.size || l.next != c.right) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    const std::string_view piece = tv.substr(sym[i].start, sym[i].len);
    const int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t b = byte_token_[static_cast<unsigned char>(c)];
      if (b >= 0) {
        out.push_back(b);
      } else if (vocab_.unk >= 0) {
        out.push_back(vocab_.unk);  // no byte fallback in this vocabulary: one unknown per character
        break;
      }
    }
  }
}

}  // namespace ts
