// Streaming detokenization and id range checks.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"
#include "util/error.h"

namespace ts {
namespace {

const Tokenizer& o200k() {
  static const auto tok = Tokenizer::from_tiktoken(test::tokenizer_data("o200k_base.tiktoken"), "o200k_base", {});
  return *tok;
}

// Text whose characters are split across several byte-level tokens.
const char* const kMultiByte = "Emoji 🦙🚀👍🏽 and 👨‍👩‍👧 mixed with 東京は日本の首都です。 កាន់តែពិសេស ½ Äpfel";

TEST(StreamDecoder, NeverEmitsPartialCharacters) {
  const Tokenizer& t = o200k();
  const auto ids = t.encode(kMultiByte, false, false);
  size_t partial_tokens = 0;
  for (int32_t id : ids) partial_tokens += !utf8_is_valid(t.token_bytes(id));
  ASSERT_GT(partial_tokens, 3u) << "the text should exercise split characters";

  StreamDecoder dec(t);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = dec.push(id);
    EXPECT_TRUE(utf8_is_valid(piece));
    streamed += piece;
  }
  streamed += dec.flush();
  EXPECT_EQ(streamed, t.decode(ids));
  EXPECT_EQ(streamed, kMultiByte);
}

TEST(StreamDecoder, IncompleteTailBecomesReplacementCharacter) {
  const Tokenizer& t = o200k();
  const auto ids = t.encode("🦙", false, false);
  ASSERT_GT(ids.size(), 1u);
  StreamDecoder dec(t);
  EXPECT_EQ(dec.push(ids[0]), "");  // held back: the character is not complete yet
  EXPECT_EQ(dec.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(dec.flush(), "");
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementCharacters) {
  const Tokenizer& t = o200k();
  // Tokens for lone bytes: a continuation byte can never start a character.
  const auto cont = t.encode("\x80", false, false);
  ASSERT_EQ(cont.size(), 1u);
  StreamDecoder dec(t);
  EXPECT_EQ(dec.push(cont[0]), "\xEF\xBF\xBD");
  EXPECT_EQ(dec.push(t.encode("a", false, false)[0]), "a");
}

TEST(Tokenizer, OutOfRangeIdsAreErrors) {
  const Tokenizer& t = o200k();
  const int32_t n = t.n_vocab();
  EXPECT_THROW(t.token_bytes(n), Error);
  EXPECT_THROW(t.token_bytes(-1), Error);
  EXPECT_THROW(t.decode({1, 2, n}), Error);
  EXPECT_THROW(t.is_eog(n), Error);
  StreamDecoder dec(t);
  EXPECT_THROW(dec.push(n + 5), Error);
  EXPECT_EQ(dec.flush(), "");
}

TEST(Utf8, SanitizeFollowsMaximalSubpartRule) {
  // Truncated 3-byte sequence then ASCII: one U+FFFD for the truncated part; surrogate: one per byte.
  EXPECT_EQ(utf8_sanitize("\xE6\x9D" "a"), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(utf8_is_valid("\xEF\xBF\xBD"));
  EXPECT_FALSE(utf8_is_valid("\xC0\xAF"));
  size_t used = 0;
  EXPECT_EQ(utf8_sanitize("ab\xF0\x9F\xA6", true, &used), "ab");
  EXPECT_EQ(used, 2u);
}

}  // namespace
}  // namespace ts
