// Vocabulary bookkeeping shared by all loaders.
#include "tokenizer/vocab.h"

#include <algorithm>

namespace ts {

void Vocab::add(std::string t, TokenAttr a, float s) {
  const auto id = static_cast<int32_t>(text.size());
  if (!t.empty()) by_text.insert_or_assign(t, id);  // empty: an id no token occupies
  bytes.push_back(t);
  text.push_back(std::move(t));
  attr.push_back(a);
  score.push_back(s);
  rstrip.push_back(0);
  lstrip.push_back(0);
}

void Vocab::finish() {
  // End of generation: the declared eos/eot/eom plus end-of-turn markers found by text, as llama.cpp
  // does, because converters rarely record eot for chat models.
  eog.assign(text.size(), 0);
  for (int32_t id : {eos, eot, eom})
    if (id >= 0) eog[id] = 1;
  static const char* const kEndOfTurn[] = {
      "<|eot_id|>", "<|im_end|>",     "<|end|>", "<|return|>",      "<|call|>",           "<end_of_turn>",
      "<|endoftext|>", "<|eom_id|>", "<EOT>",   "<|end_of_text|>", "<end_of_utterance>", "<｜end▁of▁sentence｜>",
  };
  for (const char* t : kEndOfTurn) {
    const int32_t id = find(t);
    if (id >= 0) eog[id] = 1;
  }
  // Harmony (gpt-oss): <|end|> closes a message, and the turn goes on; <|return|>/<|call|> end it.
  const int32_t end = find("<|end|>");
  if (end >= 0 && find("<|return|>") >= 0 && find("<|call|>") >= 0 && end != eos) eog[end] = 0;

  // Longer special texts first, so that one containing another wins (llama.cpp's order).
  split_specials.clear();
  for (int32_t id = 0; id < size(); ++id)
    if (is_special(id) || attr[id] == TokenAttr::Unknown) split_specials.push_back(id);
  std::stable_sort(split_specials.begin(), split_specials.end(),
                   [&](int32_t a, int32_t b) { return text[a].size() > text[b].size(); });
}

}  // namespace ts
