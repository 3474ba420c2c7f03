// Weights are a pure function of (seed, tensor name, element index): the same seed gives the same
// bytes whatever the thread count, another seed changes every tensor, and generating a range in
// pieces equals generating it at once (which is what lets the writer stream row blocks).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "gguf/gguf.h"
#include "quant/kernels.h"
#include "synth/synth_test_util.h"
#include "synth/weight_rng.h"

namespace ts::synth {
namespace {

TEST(Determinism, SameSeedSameBytesAcrossThreadCounts) {
  ::ts::test::ScratchDir s;
  SynthConfig c = preset_config("gpt-oss", "tiny");
  c.seed = 42;
  test::write_model(c, s.file("a.gguf"), 1);
  test::write_model(c, s.file("b.gguf"), 3);
  const std::string a = test::file_bytes(s.file("a.gguf"));
  ASSERT_GT(a.size(), 100000u);
  EXPECT_TRUE(a == test::file_bytes(s.file("b.gguf")));
}

TEST(Determinism, AnotherSeedChangesEveryTensor) {
  ::ts::test::ScratchDir s;
  SynthConfig c = preset_config("qwen3moe", "tiny");
  c.seed = 1;
  test::write_model(c, s.file("a.gguf"));
  c.seed = 2;
  test::write_model(c, s.file("b.gguf"));
  auto a = GgufFile::open(s.file("a.gguf")), b = GgufFile::open(s.file("b.gguf"));
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (size_t i = 0; i < a->tensors().size(); ++i) {
    const GgufTensor &ta = a->tensors()[i], &tb = b->tensors()[i];
    ASSERT_EQ(ta.name, tb.name);
    ASSERT_EQ(ta.n_bytes, tb.n_bytes);
    EXPECT_NE(std::memcmp(ta.data, tb.data, ta.n_bytes), 0) << ta.name;
  }
}

TEST(Determinism, PiecewiseGenerationEqualsWhole) {
  std::vector<float> whole(1000), parts(1000);
  generate(7, "blk.0.attn_q.weight", 0.0f, 1.0f, 0, 1000, whole.data());
  generate(7, "blk.0.attn_q.weight", 0.0f, 1.0f, 0, 333, parts.data());
  generate(7, "blk.0.attn_q.weight", 0.0f, 1.0f, 333, 667, parts.data() + 333);
  EXPECT_EQ(whole, parts);
  std::vector<float> other(1000);
  generate(7, "blk.1.attn_q.weight", 0.0f, 1.0f, 0, 1000, other.data());
  EXPECT_NE(whole, other);  // tensors do not share a stream
}

TEST(Determinism, UnitNormalHasUnitVariance) {
  const uint64_t key = tensor_key(3, "x");
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double z = unit_normal(key, static_cast<uint64_t>(i));
    sum += z, sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.02);
}

// The decoded weights have the spread the plan promises: matrices 1/sqrt(fan-in), norms near 1,
// biases small. This is what keeps a forward pass over the synthesized layers sane.
TEST(WeightScale, DecodedTensorsHaveTheirPlannedSpread) {
  ::ts::test::ScratchDir s;
  test::write_model(preset_config("gpt-oss", "tiny"), s.file("g.gguf"));
  auto g = GgufFile::open(s.file("g.gguf"));
  auto stats = [&](const char* name) {
    const GgufTensor& t = g->tensor(name);
    std::vector<float> x(t.n_elements);
    quant::dequantize_ref(t.type, t.data, x.data(), static_cast<int64_t>(t.n_elements));
    double sum = 0, sq = 0;
    for (float v : x) sum += v, sq += static_cast<double>(v) * v;
    const double mean = sum / static_cast<double>(x.size());
    return std::pair{mean, std::sqrt(sq / static_cast<double>(x.size()) - mean * mean)};
  };
  const auto [qm, qs] = stats("blk.0.attn_q.weight");  // Q8_0, 128 wide rows
  EXPECT_NEAR(qm, 0.0, 0.005);
  EXPECT_NEAR(qs, 1.0 / std::sqrt(128.0), 0.01);
  const auto [em, es] = stats("blk.1.ffn_down_exps.weight");  // MXFP4, 128 wide rows
  EXPECT_NEAR(em, 0.0, 0.005);
  EXPECT_NEAR(es, 1.0 / std::sqrt(128.0), 0.015);
  const auto [tm, ts_] = stats("token_embd.weight");
  EXPECT_NEAR(tm, 0.0, 0.02);
  EXPECT_NEAR(ts_, 1.0, 0.03);
  const auto [nm, ns] = stats("blk.0.attn_norm.weight");
  EXPECT_NEAR(nm, 1.0, 0.03);
  EXPECT_NEAR(ns, 0.1, 0.03);
  const auto [bm, bs] = stats("blk.0.ffn_up_exps.bias");
  EXPECT_NEAR(bm, 0.0, 0.01);
  EXPECT_NEAR(bs, 0.05, 0.01);
}

}  // namespace
}  // namespace ts::synth
