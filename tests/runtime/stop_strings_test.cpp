// Stop strings over streamed text: never half-streamed, the text ends before the first one, and text
// that only looked like a stop string's start is released once it cannot be one.
#include <gtest/gtest.h>

#include "runtime/stop_strings.h"

namespace ts {
namespace {

std::string feed(StopStrings& s, const std::vector<std::string>& pieces, std::vector<std::string>* released = nullptr) {
  std::string out;
  for (const auto& p : pieces) {
    const std::string r = s.push(p);
    if (released) released->push_back(r);
    out += r;
  }
  return out + s.flush();
}

TEST(StopStrings, TextEndsBeforeTheFirstStopString) {
  StopStrings s({"END", "\n\n"});
  EXPECT_EQ(feed(s, {"one two", " E", "N", "D three"}), "one two ");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.push("more"), "");
}

TEST(StopStrings, APossibleStartIsHeldBackUntilItCannotBeOne) {
  StopStrings s({"END"});
  std::vector<std::string> released;
  EXPECT_EQ(feed(s, {"a E", "N", "x"}, &released), "a ENx");
  EXPECT_EQ(released, (std::vector<std::string>{"a ", "", "ENx"}));
  EXPECT_FALSE(s.stopped());
}

TEST(StopStrings, TheEarliestOfSeveralWins) {
  StopStrings s({"cd", "b"});
  EXPECT_EQ(feed(s, {"abcd"}), "a");
}

TEST(StopStrings, HeldTextIsReleasedAtTheEnd) {
  StopStrings s({"STOP"});
  EXPECT_EQ(feed(s, {"x", "ST"}), "xST");
}

TEST(StopStrings, NoStopStringsPassEverythingThrough) {
  StopStrings s({"", ""});
  EXPECT_TRUE(s.empty());
  std::vector<std::string> released;
  EXPECT_EQ(feed(s, {"a", "", "<|end|>"}, &released), "a<|end|>");
  EXPECT_EQ(released, (std::vector<std::string>{"a", "", "<|end|>"}));
}

}  // namespace
}  // namespace ts
