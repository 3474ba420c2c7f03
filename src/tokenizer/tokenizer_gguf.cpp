// Tokenizer from GGUF metadata (tokenizer.ggml.*), with llama.cpp's defaults for what converters
// leave out: per-model default special ids, BOS rules, and the Phi-3 special-token rstrip.
#include <algorithm>
#include <cctype>

#include "gguf/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/spm.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"
#include "tokenizer/wpm.h"
#include "util/error.h"

namespace ts {

namespace {

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  for (size_t at; (at = s.find(from)) != std::string_view::npos; s.remove_prefix(at + from.size())) {
    out += s.substr(0, at);
    out += to;
  }
  out += s;
  return out;
}

// "<0xAB>" -> the byte; the token text itself when it is not of that form.
std::string byte_token_value(const std::string& text) {
  if (text.size() == 6 && text.starts_with("<0x") && text.back() == '>' && std::isxdigit(static_cast<unsigned char>(text[3])) &&
      std::isxdigit(static_cast<unsigned char>(text[4])))
    return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
  return text;
}

// What a token decodes to. Normal tokens are stored escaped (GPT-2 byte mapping, or U+2581 for the
// space in SentencePiece and WordPiece); special, user-defined and other tokens stand for their text.
std::string token_value(const std::string& text, TokenAttr attr, bool byte_level) {
  if (attr == TokenAttr::Byte) return byte_token_value(text);
  if (attr != TokenAttr::Normal) return text;
  if (byte_level) return gpt2_unicode_to_bytes(text).value_or(text);
  return replace_all(text, "\xE2\x96\x81", " ");
}

// A special-token id from the file; like llama.cpp, an out-of-range value keeps the default.
void read_id(const GgufFile& g, const char* key, int32_t n, int32_t& id) {
  if (id >= n) id = -1;
  const int64_t v = g.get_int(key, -1);
  if (v >= 0 && v < n) id = static_cast<int32_t>(v);
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& g) {
  const std::string model = g.get_string("tokenizer.ggml.model", "");
  if (model.empty() || model == "none" || model == "no_vocab") return nullptr;
  if (model != "gpt2" && model != "llama" && model != "bert")
    fail("{}: tokenizer model '{}' is not supported (supported: gpt2, llama, bert)", g.path(), model);
  const bool byte_level = model == "gpt2";

  const std::vector<std::string>& tokens = g.get_string_array("tokenizer.ggml.tokens");
  const auto n = static_cast<int32_t>(tokens.size());
  std::vector<int64_t> types;
  std::vector<double> scores;
  if (g.has("tokenizer.ggml.token_type")) types = g.get_int_array("tokenizer.ggml.token_type");
  if (g.has("tokenizer.ggml.scores")) scores = g.get_float_array("tokenizer.ggml.scores");
  if ((!types.empty() && types.size() < tokens.size()) || (!scores.empty() && scores.size() < tokens.size()))
    fail("{}: tokenizer.ggml.token_type/scores have fewer entries than the {} tokens", g.path(), n);

  auto v = std::make_unique<Vocab>();
  for (int32_t id = 0; id < n; ++id) {
    const int64_t t = types.empty() ? 1 : types[id];
    const TokenAttr attr = t >= 1 && t <= 6 ? static_cast<TokenAttr>(t) : TokenAttr::Undefined;
    v->add(tokens[id], attr, scores.empty() ? 0.0f : static_cast<float>(scores[id]));
    v->bytes[id] = token_value(tokens[id], attr, byte_level);
  }

  std::unique_ptr<PreTokenizer> pre;
  bool add_space_prefix = false;
  if (model == "llama") {
    v->bos = 1, v->eos = 2, v->unk = 0;
    v->add_bos = true;
    add_space_prefix = true;
  } else if (model == "bert") {
    v->bos = 101, v->unk = 100, v->sep = 102, v->pad = 0;
    v->add_bos = v->add_sep = true;
  } else {
    pre = PreTokenizer::by_name(g.get_string("tokenizer.ggml.pre", "default"));
    v->add_bos = pre->add_bos;
  }
  read_id(g, "tokenizer.ggml.bos_token_id", n, v->bos);
  read_id(g, "tokenizer.ggml.eos_token_id", n, v->eos);
  read_id(g, "tokenizer.ggml.eot_token_id", n, v->eot);
  read_id(g, "tokenizer.ggml.eom_token_id", n, v->eom);
  read_id(g, "tokenizer.ggml.unknown_token_id", n, v->unk);
  read_id(g, "tokenizer.ggml.seperator_token_id", n, v->sep);
  read_id(g, "tokenizer.ggml.padding_token_id", n, v->pad);
  v->add_bos = g.get_bool("tokenizer.ggml.add_bos_token", v->add_bos);
  v->add_eos = g.get_bool("tokenizer.ggml.add_eos_token", v->add_eos);
  v->add_sep = g.get_bool("tokenizer.ggml.add_sep_token", v->add_sep);
  add_space_prefix = g.get_bool("tokenizer.ggml.add_space_prefix", add_space_prefix);
  v->finish();

  // Phi-3's chat tokens eat the whitespace after them (HuggingFace rstrip=True), except these.
  std::string name = g.get_string("general.name", "");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : v->split_specials) v->rstrip[id] = 1;
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"})
      if (const int32_t id = v->find(t); id >= 0) v->rstrip[id] = 0;
  }

  std::unique_ptr<TextEncoder> enc;
  if (model == "llama") {
    enc = std::make_unique<SpmEncoder>(*v, add_space_prefix);
  } else if (model == "bert") {
    const bool lower = g.get_bool("tokenizer.ggml.normalizer.lowercase", true);
    enc = std::make_unique<WpmEncoder>(*v, lower, g.get_bool("tokenizer.ggml.normalizer.strip_accents", lower));
  } else {
    if (!g.has("tokenizer.ggml.merges")) fail("{}: BPE vocabulary without tokenizer.ggml.merges", g.path());
    enc = std::make_unique<BpeEncoder>(*v, std::move(pre), g.get_string_array("tokenizer.ggml.merges"));
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(v), std::move(enc)));
}

}  // namespace ts
