// Streaming parser for gpt-oss (Harmony) output. The model writes messages framed by special tokens:
//   <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...<|return|>
// and tool calls with a recipient in the header:
//   <|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{...}<|call|>
// Contract with the caller: every special token arrives as one whole piece (the detokenizer yields
// it per token id); ordinary text may be split anywhere, so header text is buffered until
// <|message|> while content text is passed through as soon as it arrives.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ts::chat {

class HarmonyParser {
 public:
  struct Event {
    std::string channel;    // analysis, commentary, final (as written in the header)
    std::string recipient;  // e.g. "functions.get_weather"; empty when addressed to the user
    std::string text;       // content delta
  };

  // Returns the content deltas of this piece (none for special tokens and header text). The
  // generation prompt already opened the first header ("<|start|>assistant"), so parsing starts in a
  // header. Pieces after a stop token are ignored: the turn is over.
  std::vector<Event> push(std::string_view piece);
  // <|return|> (answer complete) or <|call|> (tool call complete) was seen; <|end|> only closes one
  // message and the model continues with the next.
  bool stopped() const { return !stop_token_.empty(); }
  std::string stop_token() const { return stop_token_; }

 private:
  enum class Part { Role, Channel, Constrain, Content };
  void begin_header();
  void finish_header();

  Part part_ = Part::Role;
  std::string role_text_, channel_text_;  // raw header text, parsed at <|message|>
  std::string channel_, recipient_;
  std::string stop_token_;
};

}  // namespace ts::chat
