// Tokenizer from an OpenAI .tiktoken rank file: "base64(token bytes) rank" per line; the rank is the
// token id and also its merge priority.
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"
#include "util/error.h"
#include "util/input_file.h"

namespace ts {

namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool base64_decode(std::string_view in, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const int v = base64_value(in[i]);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=') return false;
  return !out.empty();
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_tiktoken(const std::string& path, std::string_view encoding,
                                                    const std::vector<std::pair<std::string, int32_t>>& specials) {
  if (encoding != "o200k_base" && encoding != "cl100k_base")
    fail("{}: unknown tiktoken encoding '{}' (supported: o200k_base, cl100k_base)", path, encoding);
  const std::string data = read_regular_file(path, "tiktoken file");

  std::vector<std::string> ranked;  // by rank
  std::vector<uint8_t> present;
  std::string bytes;
  size_t line_no = 0;
  for (size_t pos = 0; pos < data.size();) {
    size_t eol = data.find('\n', pos);
    if (eol == std::string::npos) eol = data.size();
    std::string_view line(data.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    int64_t rank = -1;
    if (sp != std::string_view::npos) {
      rank = 0;
      for (char c : line.substr(sp + 1)) {
        if (c < '0' || c > '9' || rank > (1 << 24)) {
          rank = -1;
          break;
        }
        rank = rank * 10 + (c - '0');
      }
    }
    if (rank < 0 || !base64_decode(line.substr(0, sp), bytes))
      fail("{}:{}: expected 'base64-token rank', got '{}'", path, line_no, line.substr(0, 80));
    // Ids are dense in real rank files; a rank beyond the file's size in bytes would make the
    // vocabulary (one entry per id, used or not) grow out of proportion to the file.
    if (static_cast<size_t>(rank) >= data.size()) fail("{}:{}: rank {} is out of range for a file of {} bytes", path, line_no, rank, data.size());
    if (static_cast<size_t>(rank) >= ranked.size()) ranked.resize(rank + 1), present.resize(rank + 1);
    if (present[rank]) fail("{}:{}: rank {} appears twice", path, line_no, rank);
    ranked[rank] = bytes;
    present[rank] = 1;
  }
  if (ranked.empty()) fail("{}: no tokens in tiktoken file", path);

  const auto n_ranked = static_cast<int32_t>(ranked.size());
  int32_t n = n_ranked;
  for (const auto& [text, id] : specials) {
    if (id < 0 || (id < n_ranked && present[id])) fail("{}: special token {} has id {}, which is taken or invalid", path, text, id);
    n = std::max(n, id + 1);
  }
  std::vector<const std::string*> special_at(n, nullptr);
  for (const auto& [text, id] : specials) {
    if (special_at[id]) fail("{}: two special tokens have id {}", path, id);
    special_at[id] = &text;
  }

  auto v = std::make_unique<Vocab>();
  for (int32_t id = 0; id < n; ++id) {
    if (special_at[id]) v->add(*special_at[id], TokenAttr::Control);
    else if (id < n_ranked && present[id]) v->add(std::move(ranked[id]), TokenAttr::Normal);
    else v->add("", TokenAttr::Unused);  // an id nothing occupies: decodes to nothing
  }
  v->bos = v->find("<|startoftext|>");
  v->eos = v->find("<|endoftext|>");
  v->finish();
  auto enc = std::make_unique<BpeEncoder>(*v, PreTokenizer::by_name(encoding), n_ranked);
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(v), std::move(enc)));
}

}  // namespace ts
