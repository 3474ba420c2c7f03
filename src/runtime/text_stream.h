// Generated token ids -> the text a client may see, as it streams: the streaming detokenizer (never
// a broken UTF-8 sequence) followed by stop strings. Without stop strings every piece is exactly one
// token's text, so a special token arrives whole (the Harmony parser relies on that).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace ts {

class TextStream {
 public:
  TextStream(const Tokenizer& tok, std::vector<std::string> stop) : decoder_(tok), stop_(std::move(stop)) {}

  std::string push(int32_t id) { return stop_.stopped() ? std::string() : stop_.push(decoder_.push(id)); }
  // The rest at the end of generation: held-back text and an unfinished UTF-8 sequence (as U+FFFD).
  std::string flush() {
    if (stop_.stopped()) return {};
    std::string out = stop_.push(decoder_.flush());
    return out + stop_.flush();
  }
  bool stopped() const { return stop_.stopped(); }

 private:
  StreamDecoder decoder_;
  StopStrings stop_;
};

}  // namespace ts
