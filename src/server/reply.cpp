#include "server/reply.h"

#include <random>

namespace ts::server {
namespace {

std::string call_id() {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlnum[rng() % (sizeof kAlnum - 1)];
  return id;
}

}  // namespace

Reply::Reply(const Tokenizer& tok, bool harmony, std::vector<std::string> stop)
    : tok_(tok),
      harmony_(harmony ? std::make_unique<chat::HarmonyParser>() : nullptr),
      stop_(harmony ? std::move(stop) : std::vector<std::string>{}) {}

void Reply::text(const std::string& piece, ReplyDelta& d) {
  if (!harmony_) {
    d.content += piece;
    content_ += piece;
    return;
  }
  for (const auto& ev : harmony_->push(piece)) {
    if (!ev.recipient.empty()) {
      // A new recipient starts a new call (a call ends generation with <|call|>, so one message is one call).
      if (calls_.empty() || ev.recipient != call_recipient_) {
        const std::string name = ev.recipient.starts_with("functions.") ? ev.recipient.substr(10) : ev.recipient;
        calls_.push_back(ToolCall{call_id(), name, ""});
        call_recipient_ = ev.recipient;
        d.tool_calls.push_back(ToolCallDelta{calls_.size() - 1, true, ""});
      } else if (d.tool_calls.empty() || d.tool_calls.back().index != calls_.size() - 1) {
        d.tool_calls.push_back(ToolCallDelta{calls_.size() - 1, false, ""});
      }
      d.tool_calls.back().arguments += ev.text;
      calls_.back().arguments += ev.text;
    } else if (ev.channel == "analysis") {
      d.reasoning += ev.text;
      reasoning_ += ev.text;
    } else {
      const std::string shown = stop_.push(ev.text);
      d.content += shown;
      content_ += shown;
    }
  }
}

ReplyDelta Reply::push(const SampledToken& t) {
  ReplyDelta d;
  text(t.text, d);
  d.tokens.push_back(t);
  return d;
}

ReplyDelta Reply::finish(const JobResult& r) {
  ReplyDelta d;
  text(r.tail, d);
  if (harmony_) {
    // The end-of-generation token (<|return|> or <|call|>) tells an answer from a tool call.
    if (r.finish == Finish::EndOfText && r.last_token >= 0) text(tok_.token_bytes(r.last_token), d);
    const std::string rest = stop_.flush();
    d.content += rest;
    content_ += rest;
  }
  return d;
}

std::string Reply::finish_reason(const JobResult& r) const {
  if (harmony_ && harmony_->stop_token() == "<|call|>" && !calls_.empty()) return "tool_calls";
  if (stop_found()) return "stop";
  switch (r.finish) {
    case Finish::MaxTokens:
    case Finish::ContextFull: return "length";
    default: return "stop";
  }
}

}  // namespace ts::server
