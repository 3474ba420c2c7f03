// GGUF vocabulary loading rules, on small synthetic files: no-vocabulary models, unknown
// pre-tokenizers and models, special-token parsing, BOS/EOS rules and end-of-generation detection.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ts {
namespace {

// A byte-level BPE vocabulary: the 256 GPT-2-mapped bytes, "ab" (merge "a b"), and two specials.
std::string write_bpe_vocab(const std::string& name, const std::string& pre, bool with_model = true) {
  const std::string path = (std::filesystem::temp_directory_path() / ("ts_tok_" + name + ".gguf")).string();
  GgufWriter w(path);
  if (with_model) w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
  uint32_t next = 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const uint32_t cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80) s += static_cast<char>(cp);
    else s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
    tokens.push_back(s);
    types.push_back(1);
  }
  tokens.push_back("ab"), types.push_back(1);               // 256
  tokens.push_back("<|im_start|>"), types.push_back(3);     // 257
  tokens.push_back("<|im_end|>"), types.push_back(3);       // 258
  tokens.push_back("<tool>"), types.push_back(4);           // 259, user-defined
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_string_array("tokenizer.ggml.merges", {"a b"});
  w.set_u32("tokenizer.ggml.eos_token_id", 258);
  w.set_u32("tokenizer.ggml.bos_token_id", 257);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.begin_data();
  w.finish();
  return path;
}

TEST(GgufVocab, NoVocabularyGivesNull) {
  const auto g = GgufFile::open(write_bpe_vocab("none", "gpt-2", false));
  EXPECT_EQ(Tokenizer::from_gguf(*g), nullptr);
}

TEST(GgufVocab, UnknownPreTokenizerIsAnErrorNamingIt) {
  const auto g = GgufFile::open(write_bpe_vocab("badpre", "no-such-pre"));
  try {
    Tokenizer::from_gguf(*g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-pre"), std::string::npos) << e.what();
  }
}

TEST(GgufVocab, SpecialsBosAndEndOfGeneration) {
  const auto g = GgufFile::open(write_bpe_vocab("ok", "gpt-2"));
  const auto t = Tokenizer::from_gguf(*g);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->n_vocab(), 260);
  EXPECT_EQ(t->bos(), 257);
  EXPECT_TRUE(t->add_bos());
  EXPECT_EQ(t->encode("ab", true, false), (std::vector<int32_t>{257, 256}));
  EXPECT_EQ(t->encode("<|im_start|>ab", false, true), (std::vector<int32_t>{257, 256}));
  // Control tokens stay text unless parsed; user-defined tokens are always recognised.
  const auto literal = t->encode("<|im_start|>", false, false);
  EXPECT_GT(literal.size(), 1u);
  EXPECT_EQ(t->decode(literal), "<|im_start|>");
  EXPECT_EQ(t->encode("x<tool>", false, false), (std::vector<int32_t>{'x', 259}));
  EXPECT_EQ(t->token_bytes(257), "<|im_start|>");
  // Token ids 0..255 are the bytes; the space's token is stored as "\u0120" and decodes to a space.
  EXPECT_EQ(t->decode({'a', 256, ' '}), "aab ");
  EXPECT_TRUE(t->is_eog(258));
  EXPECT_FALSE(t->is_eog(257));
  EXPECT_TRUE(t->is_special(259));
  EXPECT_FALSE(t->is_special(256));
  EXPECT_EQ(t->find_token("ab"), 256);
  EXPECT_EQ(t->find_token("abc"), std::nullopt);
}

}  // namespace
}  // namespace ts
