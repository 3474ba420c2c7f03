// Real model vocabularies against llama.cpp's results (tests/data/real/*.json): prompts encoded with
// the model's BOS rule and specials not parsed, and the detokenized greedy continuations. The models
// come from the cache (`turbospark fetch`); see support/real_models.h for when a missing one fails.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "gguf/gguf.h"
#include "support/real_models.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace ts {
namespace {

class RealModel : public ::testing::TestWithParam<const char*> {};

TEST_P(RealModel, MatchesLlamaCpp) {
  const auto ref = nlohmann::json::parse(test::read_file(std::string(TS_TEST_DATA) + "/real/" + GetParam() + ".json"));
  const std::string file = ref.at("model").get<std::string>();
  const std::string path = cached_model_path(file);
  TS_REQUIRE_REAL_MODEL(path);
  const auto gguf = GgufFile::open(path);
  const auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_NE(tok, nullptr);
  size_t n = 0;
  for (const auto& c : ref.at("cases")) {
    const std::string prompt = c.at("prompt");
    EXPECT_EQ(tok->encode(prompt, true, false), c.at("prompt_ids").get<std::vector<int32_t>>()) << "prompt: " << prompt;
    const auto greedy = c.at("greedy_ids").get<std::vector<int32_t>>();
    // The reference shows a character cut by the token limit as U+FFFD.
    EXPECT_EQ(utf8_sanitize(tok->decode(greedy)), c.at("greedy_text").get<std::string>()) << "prompt: " << prompt;
    for (int32_t id : greedy) EXPECT_FALSE(tok->is_eog(id)) << "llama.cpp kept generating after " << id;
    ++n;
  }
  EXPECT_GT(n, 0u);
}

INSTANTIATE_TEST_SUITE_P(Models, RealModel, ::testing::Values("smollm2-135m-instruct-q4_1", "gemma-3-270m-q4_k_m"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-' || ch == '.') ch = '_';
                           return s;
                         });

TEST(RealModelChat, SmolLM2ChatTokens) {
  const std::string path = cached_model_path(known_model("smollm2-135m-instruct").file);
  TS_REQUIRE_REAL_MODEL(path);
  const auto gguf = GgufFile::open(path);
  const auto tok = Tokenizer::from_gguf(*gguf);
  const int32_t start = tok->find_token("<|im_start|>").value(), end = tok->find_token("<|im_end|>").value();
  const auto ids = tok->encode("<|im_start|>user\nHi<|im_end|>\n", true, true);
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), start);
  EXPECT_NE(std::find(ids.begin(), ids.end(), end), ids.end());
  EXPECT_TRUE(tok->is_eog(end));
  EXPECT_FALSE(tok->is_eog(start));
  EXPECT_TRUE(tok->is_special(start));
}

TEST(RealModelChat, GemmaEndOfTurn) {
  const std::string path = cached_model_path(known_model("gemma-3-270m").file);
  TS_REQUIRE_REAL_MODEL(path);
  const auto gguf = GgufFile::open(path);
  const auto tok = Tokenizer::from_gguf(*gguf);
  const int32_t eot = tok->find_token("<end_of_turn>").value();
  EXPECT_TRUE(tok->is_eog(eot));
  EXPECT_TRUE(tok->add_bos());
  const auto ids = tok->encode("<start_of_turn>user\nHi<end_of_turn>\n", true, true);
  EXPECT_EQ(ids.at(0), tok->bos());
  EXPECT_EQ(ids.at(1), tok->find_token("<start_of_turn>").value());
  EXPECT_NE(std::find(ids.begin(), ids.end(), eot), ids.end());
}

}  // namespace
}  // namespace ts
