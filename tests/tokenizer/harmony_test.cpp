// gpt-oss's Harmony vocabulary (o200k_base + chat-format specials).
#include <gtest/gtest.h>

#include <algorithm>

#include "tokenizer/harmony_vocab.h"
#include "tokenizer_test_util.h"

namespace ts {
namespace {

const Tokenizer& harmony() {
  static const auto tok = harmony_from_tiktoken(test::tokenizer_data("o200k_base.tiktoken"));
  return *tok;
}

TEST(Harmony, VocabularyLayout) {
  const Tokenizer& t = harmony();
  EXPECT_EQ(t.n_vocab(), 201088);
  EXPECT_EQ(t.find_token("<|start|>"), 200006);
  EXPECT_EQ(t.find_token("<|reserved_200001|>"), 200001);
  EXPECT_EQ(t.find_token("<|reserved_201087|>"), 201087);
  EXPECT_EQ(t.find_token("<|reserved_200006|>"), std::nullopt);  // that id is <|start|>
  EXPECT_EQ(t.token_bytes(200008), "<|message|>");
  EXPECT_TRUE(t.is_special(200012));
  EXPECT_FALSE(t.is_special(13225));  // "Hello"
  EXPECT_EQ(t.eos(), 199999);
}

TEST(Harmony, EndOfGenerationTokens) {
  const Tokenizer& t = harmony();
  EXPECT_TRUE(t.is_eog(200002));   // <|return|>
  EXPECT_TRUE(t.is_eog(200012));   // <|call|>
  EXPECT_FALSE(t.is_eog(200007));  // <|end|> separates messages within a turn
  EXPECT_FALSE(t.is_eog(200006));
  EXPECT_FALSE(t.is_eog(13225));
}

TEST(Harmony, RenderedPromptParsesSpecialTokens) {
  const Tokenizer& t = harmony();
  const std::string prompt =
      "<|start|>system<|message|>You are ChatGPT.\nReasoning: low<|end|>"
      "<|start|>user<|message|>What is 2+2?<|end|><|start|>assistant<|channel|>final<|message|>";
  const auto ids = t.encode(prompt, false, true);
  const std::vector<int32_t> specials_seen = [&] {
    std::vector<int32_t> s;
    for (int32_t id : ids)
      if (t.is_special(id)) s.push_back(id);
    return s;
  }();
  EXPECT_EQ(specials_seen, (std::vector<int32_t>{200006, 200008, 200007, 200006, 200008, 200007, 200006, 200005, 200008}));
  EXPECT_EQ(t.decode(ids), prompt);
  // Plain text between the specials is ordinary o200k: "system" after <|start|> is one token.
  EXPECT_EQ(ids[1], t.encode("system", false, false).at(0));

  // Without parse_special the same text is literal characters.
  const auto literal = t.encode(prompt, false, false);
  EXPECT_TRUE(std::none_of(literal.begin(), literal.end(), [&](int32_t id) { return t.is_special(id); }));
  EXPECT_EQ(t.decode(literal), prompt);
}

}  // namespace
}  // namespace ts
