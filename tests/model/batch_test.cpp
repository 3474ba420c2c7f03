// One forward call over several sequences: each sequence's logits are the same bytes as when it runs
// alone, whatever else shares the call and wherever each one is in its cache; KV memory is freed with
// its sequence; non-finite logits are an error naming the first layer at fault.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "cli/cli_harness.h"
#include "model/forward.h"
#include "runtime/token_file.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

// Logits of every token of `ids`, prefilled alone in chunks of `chunk`.
std::vector<float> alone(const Model& m, Backend& be, const std::vector<int32_t>& ids, int64_t chunk) {
  const int64_t V = m.hp().n_vocab, n = static_cast<int64_t>(ids.size());
  KvCache kv(be, m.hp(), n);
  Forward fwd(m, be, ForwardOptions{.max_batch = chunk});
  std::vector<float> out(n * V);
  for (int64_t i = 0; i < n; i += chunk) fwd.run(kv, ids.data() + i, std::min(chunk, n - i), true, out.data() + i * V);
  return out;
}

class Batching : public testing::TestWithParam<std::string> {};

TEST_P(Batching, EachSequenceGetsTheBytesItGetsAlone) {
  auto be = make_cpu_backend(2);
  auto model = Model::load(test::models_dir() + "/" + GetParam() + ".gguf", *be);
  const int64_t V = model->hp().n_vocab;
  const std::vector<int32_t> all = read_token_file(test::models_dir() + "/" + GetParam() + ".tokens.txt");
  // Three sequences of different lengths that start from different tokens.
  const std::vector<std::vector<int32_t>> seqs = {
      all, {all.begin() + 5, all.begin() + 26}, {all.begin() + 11, all.end()}};
  // Each sequence fed in steps of different sizes: prefill chunks, then one token per step.
  const std::vector<std::vector<int64_t>> steps = {{12, 9, 1, 1, 17}, {3, 1, 1, 1, 15}, {1, 13, 7, 8}};
  std::vector<std::unique_ptr<KvCache>> kv;
  std::vector<std::vector<float>> got(3);
  std::vector<int64_t> done(3, 0);
  for (int s = 0; s < 3; ++s) {
    kv.push_back(std::make_unique<KvCache>(*be, model->hp(), 64));
    got[s].resize(seqs[s].size() * V);
  }
  Forward fwd(*model, *be, ForwardOptions{.max_batch = 64});
  for (size_t step = 0; step < 5; ++step) {
    std::vector<SeqStep> batch;
    for (int s = 0; s < 3; ++s) {
      if (step >= steps[s].size()) continue;
      const int64_t n = steps[s][step];
      batch.push_back(SeqStep{kv[s].get(), seqs[s].data() + done[s], n, true, got[s].data() + done[s] * V});
      done[s] += n;
    }
    fwd.run(batch);
  }
  for (int s = 0; s < 3; ++s) {
    ASSERT_EQ(done[s], static_cast<int64_t>(seqs[s].size()));
    const std::vector<float> want = alone(*model, *be, seqs[s], 256);
    EXPECT_EQ(0, std::memcmp(want.data(), got[s].data(), want.size() * sizeof(float))) << "sequence " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Batching,
                         testing::Values("llama-dense-q4_k_m", "qwen3-dense-f16", "llama-moe-q8_0", "qwen3moe-q6_k",
                                         "gpt-oss-mxfp4"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return s;
                         });

TEST(Batching, KvMemoryIsFreedWithItsSequence) {
  auto be = make_cpu_backend(1);
  auto model = Model::load(test::models_dir() + "/llama-dense-f32.gguf", *be);
  const HParams& h = model->hp();
  const size_t one = 2 * static_cast<size_t>(h.n_layer) * 100 * h.n_head_kv * h.head_dim * sizeof(float);
  {
    KvCache a(*be, h, 100);
    {
      KvCache b(*be, h, 100);
      EXPECT_EQ(be->kv_bytes(), 2 * one);
    }
    EXPECT_EQ(be->kv_bytes(), one);
  }
  EXPECT_EQ(be->kv_bytes(), 0u);
}

TEST(Batching, OneCacheTwiceInACallIsRefused) {
  auto be = make_cpu_backend(1);
  auto model = Model::load(test::models_dir() + "/llama-dense-f32.gguf", *be);
  KvCache kv(*be, model->hp(), 16);
  Forward fwd(*model, *be);
  const int32_t ids[2] = {1, 2};
  const SeqStep twice[2] = {{&kv, ids, 1, false, nullptr}, {&kv, ids + 1, 1, false, nullptr}};
  EXPECT_THROW(fwd.run(twice), Error);
}

// A copy of a fixture with one weight of `tensor` replaced by NaN.
std::string with_nan_weight(const std::string& src, const std::string& tensor, const std::string& dst) {
  auto g = GgufFile::open(src);
  const GgufTensor& t = g->tensor(tensor);
  EXPECT_EQ(t.type, GgmlType::F32);
  const size_t at = static_cast<size_t>(t.data - g->file().data()) + 4 * sizeof(float);
  std::string bytes = test::read_text(src);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bytes.data() + at, &nan, sizeof nan);
  std::ofstream(dst, std::ios::binary) << bytes;
  return dst;
}

// The error of a 3-token forward call on a copy of llama-dense-f32 with a NaN in `tensor`.
std::string error_with_nan_in(const std::string& tensor) {
  test::ScratchDir dir;
  auto be = make_cpu_backend(2);
  auto model = Model::load(with_nan_weight(test::models_dir() + "/llama-dense-f32.gguf", tensor, dir.file("nan.gguf")), *be);
  KvCache kv(*be, model->hp(), 8);
  Forward fwd(*model, *be);
  const std::vector<int32_t> ids = {1, 2, 3};
  std::vector<float> logits(model->hp().n_vocab);
  try {
    fwd.run(kv, ids.data(), 3, false, logits.data());
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(NonFiniteLogits, AreAnErrorNamingTheFirstBadLayer) {
  EXPECT_THAT(error_with_nan_in("blk.1.ffn_down.weight"), HasSubstr("layer 1 is not finite"));
  EXPECT_THAT(error_with_nan_in("blk.0.attn_v.weight"), HasSubstr("layer 0 is not finite"));
}

TEST(NonFiniteLogits, InTheHeadNameTheHead) {
  EXPECT_THAT(error_with_nan_in("output_norm.weight"), HasSubstr("output head"));
}

}  // namespace
}  // namespace ts
