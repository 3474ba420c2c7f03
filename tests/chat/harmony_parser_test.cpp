// Harmony output parsing on hand-written model streams, whole and split at every byte position.
#include <gtest/gtest.h>

#include <map>

#include "chat/harmony_parser.h"

namespace ts::chat {
namespace {

constexpr std::string_view kSpecial[] = {"<|start|>", "<|channel|>", "<|constrain|>", "<|message|>",
                                         "<|end|>",   "<|return|>",  "<|call|>"};

// Cuts a stream into pieces the way the detokenizer delivers them: each special token whole, the
// text between them as one piece, and that text additionally cut at byte `split` (if inside text).
std::vector<std::string> pieces(std::string_view s, size_t split = std::string_view::npos) {
  std::vector<std::string> out;
  std::string text;
  auto flush = [&] {
    if (!text.empty()) out.push_back(text);
    text.clear();
  };
  for (size_t i = 0; i < s.size();) {
    std::string_view special;
    for (std::string_view t : kSpecial)
      if (s.substr(i).starts_with(t)) special = t;
    if (!special.empty()) {
      flush();
      out.emplace_back(special);
      i += special.size();
      continue;
    }
    if (i == split) flush();
    text += s[i++];
  }
  flush();
  return out;
}

struct Parsed {
  std::map<std::pair<std::string, std::string>, std::string> content;  // (channel, recipient) -> text
  std::string stop;
  bool operator==(const Parsed&) const = default;
};

Parsed parse(const std::vector<std::string>& ps) {
  HarmonyParser p;
  Parsed out;
  for (const std::string& piece : ps)
    for (const HarmonyParser::Event& e : p.push(piece)) out.content[{e.channel, e.recipient}] += e.text;
  out.stop = p.stop_token();
  EXPECT_EQ(p.stopped(), !out.stop.empty());
  return out;
}

// Every split position must give the same content as the unsplit stream, and that must be `want`.
void check_stream(std::string_view stream, const Parsed& want) {
  EXPECT_EQ(parse(pieces(stream)), want);
  for (size_t split = 0; split <= stream.size(); ++split)
    EXPECT_EQ(parse(pieces(stream, split)), want) << "split at byte " << split;
}

TEST(HarmonyParser, ReasoningThenFinalAnswer) {
  check_stream(
      "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|>"
      "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4 ✓<|return|>",
      Parsed{{{{"analysis", ""}, "User asks 2+2. Easy."}, {{"final", ""}, "2 + 2 = 4 ✓"}}, "<|return|>"});
}

TEST(HarmonyParser, ToolCallWithRecipientAfterChannel) {
  check_stream(
      "<|channel|>analysis<|message|>Need the weather.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
      "<|message|>{\"city\": \"Paris\"}<|call|>",
      Parsed{{{{"analysis", ""}, "Need the weather."},
              {{"commentary", "functions.get_weather"}, "{\"city\": \"Paris\"}"}},
             "<|call|>"});
}

TEST(HarmonyParser, ToolCallWithRecipientAfterRole) {
  // The generation prompt ended with "<|start|>assistant"; the model continues the header.
  check_stream(" to=functions.lookup<|channel|>commentary json<|message|>{}<|call|>",
               Parsed{{{{"commentary", "functions.lookup"}, "{}"}}, "<|call|>"});
}

TEST(HarmonyParser, EndClosesAMessageWithoutStopping) {
  HarmonyParser p;
  for (const char* piece : {"<|channel|>", "commentary", "<|message|>", "Working on it.", "<|end|>"})
    p.push(piece);
  EXPECT_FALSE(p.stopped());
  EXPECT_EQ(p.stop_token(), "");
  // Header text of the next message is not content.
  EXPECT_TRUE(p.push("<|start|>").empty());
  EXPECT_TRUE(p.push("assistant").empty());
  EXPECT_TRUE(p.push("<|channel|>").empty());
  EXPECT_TRUE(p.push("final").empty());
  EXPECT_TRUE(p.push("<|message|>").empty());
  std::vector<HarmonyParser::Event> ev = p.push("Done.");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].channel, "final");
  EXPECT_EQ(ev[0].recipient, "");
  EXPECT_EQ(ev[0].text, "Done.");
}

TEST(HarmonyParser, IgnoresPiecesAfterStop) {
  HarmonyParser p;
  for (const char* piece : {"<|channel|>", "final", "<|message|>", "ok", "<|return|>"}) p.push(piece);
  EXPECT_TRUE(p.stopped());
  EXPECT_EQ(p.stop_token(), "<|return|>");
  EXPECT_TRUE(p.push("more text").empty());
  EXPECT_TRUE(p.push("<|call|>").empty());
  EXPECT_EQ(p.stop_token(), "<|return|>");
}

}  // namespace
}  // namespace ts::chat
