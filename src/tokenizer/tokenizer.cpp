// Tokenizer: special-token splitting and the BOS/EOS rules around the algorithm-specific encoder,
// and detokenization from the per-token bytes the loaders computed.
#include "tokenizer/tokenizer.h"

#include "tokenizer/special_split.h"
#include "tokenizer/text_encoder.h"
#include "tokenizer/vocab.h"
#include "util/error.h"

namespace ts {

Tokenizer::Tokenizer(std::unique_ptr<Vocab> vocab, std::unique_ptr<TextEncoder> encoder)
    : vocab_(std::move(vocab)), encoder_(std::move(encoder)) {}

Tokenizer::~Tokenizer() = default;

int32_t Tokenizer::n_vocab() const { return vocab_->size(); }
int32_t Tokenizer::bos() const { return vocab_->bos; }
int32_t Tokenizer::eos() const { return vocab_->eos; }
bool Tokenizer::add_bos() const { return vocab_->add_bos; }

void Tokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_->size()) fail("token id {} is out of range: the vocabulary has {} tokens", id, vocab_->size());
}

bool Tokenizer::is_eog(int32_t id) const {
  check_id(id);
  return vocab_->eog[id] != 0;
}

bool Tokenizer::is_special(int32_t id) const {
  check_id(id);
  return vocab_->is_special(id);
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = vocab_->find(text);
  return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  check_id(id);
  return vocab_->bytes[id];
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    check_id(id);
    out += vocab_->bytes[id];
  }
  return out;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Vocab& v = *vocab_;
  std::vector<int32_t> out;
  auto append_required = [&](int32_t id, const char* what) {
    if (id < 0) fail("the vocabulary asks for a {} token but defines none", what);
    out.push_back(id);
  };
  if (add_special && v.add_bos) append_required(v.bos, "BOS");
  bool after_special = true;
  for (const Fragment& f : split_special_tokens(text, v, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encoder_->encode(f.text, after_special, out);
      after_special = false;
    }
  }
  if (add_special && v.add_eos) append_required(v.eos, "EOS");
  if (add_special && v.add_sep) append_required(v.sep, "separator");
  return out;
}

}  // namespace ts
