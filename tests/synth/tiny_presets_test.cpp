// The tiny preset of every family, written and read back with GgufFile, has exactly the tensors,
// shapes, types and metadata that llama.cpp's loader for the architecture expects. The expected
// tables are spelled out here by hand (from llama.cpp's src/models/*.cpp), not derived from the plan.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "gguf/gguf.h"
#include "synth/synth_test_util.h"

namespace ts::synth {
namespace {

using Dims = std::vector<uint64_t>;
struct Want {
  GgmlType type;
  Dims dims;
};
using Table = std::map<std::string, Want>;

constexpr GgmlType F32 = GgmlType::F32, Q8 = GgmlType::Q8_0, MX = GgmlType::MXFP4;

// Tensors every family shares: E wide, V tokens, Q = heads x head_dim, KV likewise.
Table common(uint64_t E, uint64_t V, uint64_t Q, uint64_t KV, int layers) {
  Table t{{"token_embd.weight", {Q8, {E, V}}}, {"output_norm.weight", {F32, {E}}}, {"output.weight", {Q8, {E, V}}}};
  for (int i = 0; i < layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    t[b + "attn_norm.weight"] = {F32, {E}};
    t[b + "attn_q.weight"] = {Q8, {E, Q}};
    t[b + "attn_k.weight"] = {Q8, {E, KV}};
    t[b + "attn_v.weight"] = {Q8, {E, KV}};
    t[b + "attn_output.weight"] = {Q8, {Q, E}};
  }
  return t;
}

void add_per_layer(Table& t, int layers, const Table& per_layer) {
  for (int i = 0; i < layers; ++i)
    for (const auto& [suffix, want] : per_layer) t["blk." + std::to_string(i) + "." + suffix] = want;
}

Table expected(const std::string& family) {
  if (family == "llama") {
    Table t = common(128, 1024, 128, 64, 2);
    add_per_layer(t, 2, {{"ffn_norm.weight", {F32, {128}}}, {"ffn_gate.weight", {Q8, {128, 256}}},
                         {"ffn_up.weight", {Q8, {128, 256}}}, {"ffn_down.weight", {Q8, {256, 128}}}});
    return t;
  }
  if (family == "mixtral") {
    Table t = common(128, 1024, 128, 64, 2);
    add_per_layer(t, 2, {{"ffn_norm.weight", {F32, {128}}}, {"ffn_gate_inp.weight", {F32, {128, 8}}},
                         {"ffn_gate_exps.weight", {Q8, {128, 128, 8}}}, {"ffn_up_exps.weight", {Q8, {128, 128, 8}}},
                         {"ffn_down_exps.weight", {Q8, {128, 128, 8}}}});
    return t;
  }
  if (family == "qwen3" || family == "qwen3moe") {
    Table t = common(128, 1024, 256, 128, 2);
    add_per_layer(t, 2, {{"attn_q_norm.weight", {F32, {64}}}, {"attn_k_norm.weight", {F32, {64}}},
                         {"ffn_norm.weight", {F32, {128}}}});
    if (family == "qwen3")
      add_per_layer(t, 2, {{"ffn_gate.weight", {Q8, {128, 256}}}, {"ffn_up.weight", {Q8, {128, 256}}},
                           {"ffn_down.weight", {Q8, {256, 128}}}});
    else
      add_per_layer(t, 2, {{"ffn_gate_inp.weight", {F32, {128, 16}}}, {"ffn_gate_exps.weight", {Q8, {128, 64, 16}}},
                           {"ffn_up_exps.weight", {Q8, {128, 64, 16}}}, {"ffn_down_exps.weight", {Q8, {64, 128, 16}}}});
    return t;
  }
  // gpt-oss
  Table t = common(128, 1024, 256, 128, 2);
  add_per_layer(t, 2, {{"attn_q.bias", {F32, {256}}}, {"attn_k.bias", {F32, {128}}}, {"attn_v.bias", {F32, {128}}},
                       {"attn_output.bias", {F32, {128}}}, {"attn_sinks.weight", {F32, {4}}},
                       {"post_attention_norm.weight", {F32, {128}}}, {"ffn_gate_inp.weight", {F32, {128, 16}}},
                       {"ffn_gate_inp.bias", {F32, {16}}}, {"ffn_gate_exps.weight", {MX, {128, 128, 16}}},
                       {"ffn_up_exps.weight", {MX, {128, 128, 16}}}, {"ffn_down_exps.weight", {MX, {128, 128, 16}}},
                       {"ffn_gate_exps.bias", {F32, {128, 16}}}, {"ffn_up_exps.bias", {F32, {128, 16}}},
                       {"ffn_down_exps.bias", {F32, {128, 16}}}});
  return t;
}

class TinyPreset : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = scratch_.file(GetParam() + ".gguf");
    test::write_model(preset_config(GetParam(), "tiny"), path_);
    g_ = GgufFile::open(path_);
  }
  ::ts::test::ScratchDir scratch_;
  std::string path_;
  std::unique_ptr<GgufFile> g_;
};

TEST_P(TinyPreset, HasExactlyTheExpectedTensors) {
  const Table want = expected(GetParam());
  ASSERT_EQ(g_->tensors().size(), want.size());
  for (const auto& t : g_->tensors()) {
    SCOPED_TRACE(t.name);
    auto it = want.find(t.name);
    ASSERT_NE(it, want.end()) << "unexpected tensor";
    EXPECT_EQ(t.type, it->second.type);
    EXPECT_EQ(t.dims, it->second.dims);
  }
}

TEST_P(TinyPreset, HasTheHyperparametersItsArchitectureReads) {
  const std::string family = GetParam();
  const std::string arch = family == "mixtral" ? "llama" : family;
  EXPECT_EQ(g_->get_string("general.architecture"), arch);
  EXPECT_THAT(g_->get_string("general.name"), ::testing::HasSubstr(family + " tiny"));
  EXPECT_EQ(g_->get_string("tokenizer.ggml.model"), "none");
  EXPECT_FALSE(g_->has("tokenizer.ggml.tokens"));
  EXPECT_EQ(g_->get_int("general.file_type"), arch == "gpt-oss" ? 38 : 7);  // MXFP4_MOE, MOSTLY_Q8_0
  const std::string a = arch + ".";
  EXPECT_EQ(g_->get_int(a + "embedding_length"), 128);
  EXPECT_EQ(g_->get_int(a + "block_count"), 2);
  EXPECT_EQ(g_->get_int(a + "attention.head_count"), 4);
  EXPECT_EQ(g_->get_int(a + "attention.head_count_kv"), 2);
  EXPECT_EQ(g_->get_int(a + "vocab_size"), 1024);
  const int64_t head_dim = arch == "llama" ? 32 : 64;
  EXPECT_EQ(g_->get_int(a + "attention.key_length"), head_dim);
  EXPECT_EQ(g_->get_int(a + "attention.value_length"), head_dim);
  EXPECT_EQ(g_->get_int(a + "rope.dimension_count"), head_dim);
  EXPECT_GT(g_->get_float(a + "attention.layer_norm_rms_epsilon"), 0.0);
  EXPECT_GT(g_->get_int(a + "context_length"), 0);
  const bool moe = family != "llama" && family != "qwen3";
  EXPECT_EQ(g_->has(a + "expert_count"), moe);
  EXPECT_EQ(g_->has(a + "expert_used_count"), moe);
  if (family == "mixtral") {
    EXPECT_EQ(g_->get_int(a + "expert_count"), 8);
    EXPECT_EQ(g_->get_int(a + "expert_used_count"), 2);
    EXPECT_EQ(g_->get_int(a + "feed_forward_length"), 128);  // llama's experts are ff wide
    EXPECT_FALSE(g_->has(a + "expert_feed_forward_length"));
  }
  if (family == "qwen3moe") {
    EXPECT_EQ(g_->get_int(a + "expert_feed_forward_length"), 64);
    EXPECT_EQ(g_->get_float(a + "rope.freq_base"), 1000000.0);
  }
  EXPECT_EQ(g_->has(a + "attention.sliding_window"), arch == "gpt-oss");
}

TEST_P(TinyPreset, FileIsCompleteAndNothingIsLeftBehind) {
  EXPECT_FALSE(std::filesystem::exists(path_ + ".partial"));
  const GgufTensor& last = g_->tensors().back();
  EXPECT_LE(g_->file().size() - (g_->data_offset() + last.offset + last.n_bytes), g_->alignment());
}

INSTANTIATE_TEST_SUITE_P(Synth, TinyPreset, ::testing::Values("llama", "mixtral", "qwen3", "qwen3moe", "gpt-oss"),
                         [](const auto& info) { return info.param == "gpt-oss" ? std::string("gpt_oss") : info.param; });

TEST(GptOss, YarnRopeAndSlidingWindowKeys) {
  ::ts::test::ScratchDir s;
  const std::string path = s.file("g.gguf");
  test::write_model(preset_config("gpt-oss", "tiny"), path);
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->get_float("gpt-oss.rope.freq_base"), 150000.0);
  EXPECT_EQ(g->get_string("gpt-oss.rope.scaling.type"), "yarn");
  EXPECT_EQ(g->get_float("gpt-oss.rope.scaling.factor"), 32.0);
  EXPECT_EQ(g->get_int("gpt-oss.rope.scaling.original_context_length"), 4096);
  EXPECT_EQ(g->get_float("gpt-oss.rope.scaling.yarn_beta_fast"), 32.0);
  EXPECT_EQ(g->get_float("gpt-oss.rope.scaling.yarn_beta_slow"), 1.0);
  EXPECT_EQ(g->get_int("gpt-oss.attention.sliding_window"), 8);
  EXPECT_EQ(g->get_int("gpt-oss.expert_count"), 16);
  EXPECT_EQ(g->get_int("gpt-oss.expert_used_count"), 4);
  EXPECT_EQ(g->get_int("gpt-oss.expert_feed_forward_length"), 128);
  EXPECT_EQ(g->get_int("gpt-oss.feed_forward_length"), 128);
}

TEST(VocabFrom, CopiesTheTokenizerAndFollowsItsSize) {
  ::ts::test::ScratchDir s;
  const std::string vocab_path = std::string(TS_TEST_DATA) + "/tokenizers/ggml-vocab-gpt-2.gguf";
  auto vocab = GgufFile::open(vocab_path);
  const size_t n_tokens = vocab->get_string_array("tokenizer.ggml.tokens").size();
  SynthConfig c = preset_config("llama", "tiny");
  c.vocab_from = vocab_path;
  const std::string path = s.file("v.gguf");
  test::write_model(c, path);
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->get_string("tokenizer.ggml.model"), vocab->get_string("tokenizer.ggml.model"));
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens"), vocab->get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(g->get_int("llama.vocab_size"), static_cast<int64_t>(n_tokens));
  EXPECT_EQ(g->tensor("token_embd.weight").dims, (Dims{128, n_tokens}));
  EXPECT_EQ(g->tensor("output.weight").dims, (Dims{128, n_tokens}));
  for (const auto& [key, value] : vocab->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) {
      EXPECT_TRUE(g->has(key)) << key;
    }
  }
}

}  // namespace
}  // namespace ts::synth
