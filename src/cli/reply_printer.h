// Prints a reply as it streams: plain text to stdout, or, for Harmony (gpt-oss), the `final`
// channel to stdout and the other channels (reasoning, tool calls) to stderr when asked for.
// Keeps the reply's visible text for the conversation history.
#pragma once
#include <memory>
#include <string>

#include "chat/harmony_parser.h"
#include "tokenizer/tokenizer.h"

namespace ts::cli {

class ReplyPrinter {
 public:
  ReplyPrinter(const Tokenizer& tok, bool harmony, bool show_reasoning);
  // Returns false once the reply is complete (Harmony's <|return|> / <|call|>).
  bool push(int32_t id);
  void finish();
  const std::string& text() const { return text_; }

 private:
  void emit(const std::string& piece);
  StreamDecoder decoder_;
  std::unique_ptr<chat::HarmonyParser> harmony_;
  bool show_reasoning_;
  std::string text_;
  std::string last_channel_;
};

}  // namespace ts::cli
