// llama.cpp's tokenizer test vocabularies: every input must encode (no BOS/EOS, specials not parsed,
// as tests/test-tokenizer-0.cpp runs them) to exactly the expected ids. Byte-level vocabularies must
// also decode back to the input.
#include <gtest/gtest.h>

#include <iostream>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace ts {
namespace {

class VocabFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabFixture, EncodesEveryCaseLikeLlamaCpp) {
  const std::string base = test::tokenizer_data(std::string("ggml-vocab-") + GetParam() + ".gguf");
  const auto gguf = GgufFile::open(base);
  const auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_NE(tok, nullptr);
  const bool byte_level = gguf->get_string("tokenizer.ggml.model") == "gpt2";
  const auto cases = test::read_vocab_cases(base + ".inp", base + ".out");
  ASSERT_FALSE(cases.empty());
  size_t passed = 0;
  for (const auto& c : cases) {
    const auto ids = tok->encode(c.input, false, false);
    EXPECT_EQ(ids, c.expected) << "input: '" << c.input << "'";
    passed += ids == c.expected;
    if (byte_level) {
      EXPECT_EQ(tok->decode(ids), c.input) << "round trip of '" << c.input << "'";
    }
  }
  std::cout << "[ vocab " << GetParam() << " ] " << passed << "/" << cases.size() << " cases pass\n";
}

INSTANTIATE_TEST_SUITE_P(LlamaCppVocabs, VocabFixture,
                         ::testing::Values("bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "llama-spm",
                                           "mpt", "phi-3", "refact", "starcoder"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace ts
