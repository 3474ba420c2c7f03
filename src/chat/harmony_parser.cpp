// Harmony output parsing: a small state machine over the header parts (role, channel, constrain)
// and the message content, driven by whole special-token pieces.
#include "chat/harmony_parser.h"

namespace ts::chat {
namespace {

// Splits header text into whitespace-separated words.
std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// The recipient may stand after the role ("assistant to=functions.f") or after the channel
// ("commentary to=functions.f"); gpt-oss writes both forms.
std::string find_recipient(std::string_view role_text, std::string_view channel_text) {
  for (std::string_view part : {role_text, channel_text})
    for (std::string_view w : words(part))
      if (w.starts_with("to=")) return std::string(w.substr(3));
  return {};
}

}  // namespace

void HarmonyParser::begin_header() {
  part_ = Part::Role;
  role_text_.clear();
  channel_text_.clear();
  channel_.clear();
  recipient_.clear();
}

void HarmonyParser::finish_header() {
  std::vector<std::string_view> ch = words(channel_text_);
  // Channel words other than the name are the recipient (handled below) or a legacy content type.
  channel_ = ch.empty() || ch[0].starts_with("to=") ? std::string() : std::string(ch[0]);
  recipient_ = find_recipient(role_text_, channel_text_);
  part_ = Part::Content;
}

std::vector<HarmonyParser::Event> HarmonyParser::push(std::string_view piece) {
  if (stopped()) return {};
  if (piece == "<|start|>") {
    begin_header();
  } else if (piece == "<|channel|>") {
    part_ = Part::Channel;
  } else if (piece == "<|constrain|>") {
    part_ = Part::Constrain;
  } else if (piece == "<|message|>") {
    finish_header();
  } else if (piece == "<|end|>") {
    // Text between <|end|> and the next <|start|> is not expected; it is treated as header text so
    // it never leaks into the content.
    begin_header();
  } else if (piece == "<|return|>" || piece == "<|call|>") {
    stop_token_ = std::string(piece);
  } else {
    switch (part_) {
      case Part::Role: role_text_ += piece; break;
      case Part::Channel: channel_text_ += piece; break;
      case Part::Constrain: break;  // content type ("json"): describes the content, is not content
      case Part::Content:
        if (!piece.empty()) return {Event{channel_, recipient_, std::string(piece)}};
        break;
    }
  }
  return {};
}

}  // namespace ts::chat
