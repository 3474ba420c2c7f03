// BPE merge loop: a linked list of symbols and a min-heap of candidate pairs (stale entries are
// skipped when popped), so a piece of n bytes costs O(n log n) rather than the naive O(n^2).
#include "tokenizer/bpe.h"

#include <queue>

#include "tokenizer/byte_unicode.h"

namespace ts {

namespace {
uint64_t pair_key(int32_t l, int32_t r) { return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r); }
}  // namespace

void BpeEncoder::index_bytes() {
  byte_id_.fill(-1);
  for (int32_t b = 0; b < 256; ++b) {
    const auto it = by_bytes_.find(std::string(1, static_cast<char>(b)));
    if (it != by_bytes_.end()) byte_id_[b] = it->second;
  }
}

BpeEncoder::BpeEncoder(const Vocab& vocab, std::unique_ptr<PreTokenizer> pre, const std::vector<std::string>& merges)
    : pre_(std::move(pre)), rank_by_concat_(false) {
  // Every token whose text is GPT-2-mapped is reachable by the merges under its raw bytes; llama.cpp
  // looks tokens up the same way (by mapped text, later ids overriding earlier ones).
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (auto raw = gpt2_unicode_to_bytes(vocab.text[id])) by_bytes_.insert_or_assign(std::move(*raw), id);
  }
  index_bytes();
  pair_merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) continue;
    const auto left = gpt2_unicode_to_bytes(std::string_view(m).substr(0, sp));
    const auto right = gpt2_unicode_to_bytes(std::string_view(m).substr(sp + 1));
    if (!left || !right) continue;
    const auto l = by_bytes_.find(*left), r = by_bytes_.find(*right), lr = by_bytes_.find(*left + *right);
    if (l == by_bytes_.end() || r == by_bytes_.end() || lr == by_bytes_.end()) continue;
    pair_merges_.emplace(pair_key(l->second, r->second), Merge{static_cast<int32_t>(rank), lr->second});
  }
}

BpeEncoder::BpeEncoder(const Vocab& vocab, std::unique_ptr<PreTokenizer> pre, int32_t n_ranked)
    : pre_(std::move(pre)), rank_by_concat_(true) {
  by_bytes_.reserve(n_ranked);
  for (int32_t id = 0; id < n_ranked; ++id) by_bytes_.emplace(vocab.bytes[id], id);
  index_bytes();
}

bool BpeEncoder::find_merge(std::string_view piece, const Symbol& l, const Symbol& r, Merge& m) const {
  if (rank_by_concat_) {
    const auto it = by_bytes_.find(piece.substr(l.start, l.len + r.len));
    if (it == by_bytes_.end()) return false;
    m = {it->second, it->second};
    return true;
  }
  if (l.id < 0 || r.id < 0) return false;
  const auto it = pair_merges_.find(pair_key(l.id, r.id));
  if (it == pair_merges_.end()) return false;
  m = it->second;
  return true;
}

void BpeEncoder::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (pre_->ignore_merges || piece.size() == 1) {
    const auto it = by_bytes_.find(piece);
    if (it != by_bytes_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const auto n = static_cast<int32_t>(piece.size());
  std::vector<Symbol> sym(n);
  for (int32_t i = 0; i < n; ++i) {
    Symbol& s = sym[i];
    s.start = static_cast<uint32_t>(i);
    s.len = 1;
    s.id = byte_id_[static_cast<unsigned char>(piece[i])];
    s.prev = i - 1;
    s.next = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank, left, right, left_id, right_id, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    Merge m;
    if (find_merge(piece, sym[l], sym[r], m)) heap.push({m.rank, l, r, sym[l].id, sym[r].id, m.id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[c.left];
    // Stale when either side has merged with something else since the pair was queued.
    if (l.len == 0 || l.next != c.right || l.id != c.left_id || sym[c.right].id != c.right_id) continue;
    Symbol& r = sym[c.right];
    l.len += r.len;
    l.id = c.merged;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    r.len = 0;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  // A byte without a single-byte token (never the case in byte-level vocabularies) is dropped, as
  // llama.cpp does.
  for (int32_t i = 0; i >= 0; i = sym[i].next)
    if (sym[i].id >= 0) out.push_back(sym[i].id);
}

void BpeEncoder::encode(std::string_view text, bool, std::vector<int32_t>& out) const {
  std::vector<std::string_view> pieces;
  pre_->split(text, pieces);
  for (std::string_view p : pieces) encode_piece(p, out);
}

}  // namespace ts
