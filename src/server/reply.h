// A job's tokens -> what an OpenAI client sees, as they stream. Plain models: the text is the
// content. Harmony (gpt-oss): the `analysis` channel becomes reasoning_content (as llama-server and
// vLLM do), `final` (and commentary addressed to the user) the content, and a message addressed to a
// tool ("to=functions.NAME") a tool call whose arguments are the message's JSON text. A Harmony
// reply's stop strings apply to its content, so they are matched here rather than in the sequence
// (which would see channel headers too); when one is found the caller ends the job.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chat/harmony_parser.h"
#include "runtime/stop_strings.h"
#include "server/job.h"
#include "tokenizer/tokenizer.h"

namespace ts::server {

struct ToolCall {
  std::string id, name, arguments;
};

struct ToolCallDelta {
  size_t index = 0;
  bool first = false;  // the call's id and name go with its first delta
  std::string arguments;
};

struct ReplyDelta {
  std::string content, reasoning;
  std::vector<ToolCallDelta> tool_calls;
  std::vector<SampledToken> tokens;  // the tokens behind this delta, for log-probabilities
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty() && tokens.empty(); }
};

class Reply {
 public:
  // `stop` is applied here only for Harmony replies (plain replies stop inside the sequence).
  Reply(const Tokenizer& tok, bool harmony, std::vector<std::string> stop);

  ReplyDelta push(const SampledToken& t);
  ReplyDelta finish(const JobResult& r);
  // A stop string was found in a Harmony reply's content: the job should end now.
  bool stop_found() const { return stop_.stopped(); }
  // "stop", "length" or "tool_calls" (call after finish()).
  std::string finish_reason(const JobResult& r) const;

  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }
  const std::vector<ToolCall>& tool_calls() const { return calls_; }

 private:
  void text(const std::string& piece, ReplyDelta& d);

  const Tokenizer& tok_;
  std::unique_ptr<chat::HarmonyParser> harmony_;
  StopStrings stop_;
  std::string content_, reasoning_;
  std::vector<ToolCall> calls_;
  std::string call_recipient_;  // recipient of the tool call being written
};

}  // namespace ts::server
