// A tokenizer with fewer tokens than the model has output rows (issue 10, item 7): the ids the
// tokenizer lacks are never sampled (one note on stderr says so), instead of being drawn and then
// failing in end-of-generation detection or detokenization.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_harness.h"
#include "support/gguf_edit.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

// A SentencePiece vocabulary of <unk>, <s>, </s> and the 256 byte tokens (every text encodes by
// byte fallback): 259 tokens for a model with 1024 output rows.
void add_small_vocabulary(test::GgufContents& c) {
  GgufValue tokens, types, scores;
  tokens.type = types.type = scores.type = GgufValueType::ARRAY;
  tokens.elem_type = GgufValueType::STRING;
  types.elem_type = GgufValueType::I32;
  scores.elem_type = GgufValueType::F32;
  tokens.strings = {"<unk>", "<s>", "</s>"};
  types.ints = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.strings.push_back(fmt::format("<0x{:02X}>", b));
    types.ints.push_back(6);
  }
  scores.floats.assign(tokens.strings.size(), 0.0);
  c.set("tokenizer.ggml.model", test::string_value("llama"));
  c.set("tokenizer.ggml.tokens", tokens);
  c.set("tokenizer.ggml.token_type", types);
  c.set("tokenizer.ggml.scores", scores);
}

TEST(VocabMismatch, IdsTheTokenizerLacksAreNeverSampled) {
  test::ScratchDir dir;
  test::GgufContents c = test::read_gguf(test::models_dir() + "/llama-dense-f32.gguf");
  add_small_vocabulary(c);
  const std::string path = dir.file("small-vocab.gguf");
  test::write_gguf(c, path);
  for (const std::vector<std::string>& sampling : {std::vector<std::string>{"--temp", "0"},
                                                   std::vector<std::string>{"--temp", "1.5", "--top-k", "0", "--top-p", "1", "--min-p", "0", "--seed", "7"}}) {
    std::vector<std::string> args{"run", "-m", path, "-p", "hello", "-n", "32", "-t", "2"};
    args.insert(args.end(), sampling.begin(), sampling.end());
    const test::CliRun r = test::run_cli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string note = "ids 259..1023 are never sampled";
    EXPECT_THAT(r.err, HasSubstr(note));
    EXPECT_EQ(r.err.find(note), r.err.rfind(note)) << "said once";
  }
}

}  // namespace
}  // namespace ts
