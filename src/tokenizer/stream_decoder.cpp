// Streaming detokenizer: keeps at most one unfinished UTF-8 sequence between calls.
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace ts {

std::string StreamDecoder::push(int32_t id) {
  pending_ += tok_.token_bytes(id);  // throws on a bad id before any state changes
  size_t used = 0;
  std::string out = utf8_sanitize(pending_, true, &used);
  pending_.erase(0, used);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = utf8_sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace ts
