// Prints a reply as it streams: plain text to stdout, or, for Harmony (gpt-oss), the `final`
// channel to stdout and the other channels (reasoning, tool calls) to stderr when asked for.
// Keeps the reply's visible text for the conversation history.
#pragma once
#include <memory>
#include <string>

#include "chat/harmony_parser.h"

namespace ts::cli {

class ReplyPrinter {
 public:
  ReplyPrinter(bool harmony, bool show_reasoning);
  // One piece of the reply's text as the generator releases it (for Harmony, a special token's
  // text arrives as one piece). Returns false once the reply is complete (<|return|> / <|call|>).
  bool push(const std::string& piece);
  const std::string& text() const { return text_; }

 private:
  std::unique_ptr<chat::HarmonyParser> harmony_;
  bool show_reasoning_;
  std::string text_;
  std::string last_channel_;
};

}  // namespace ts::cli
