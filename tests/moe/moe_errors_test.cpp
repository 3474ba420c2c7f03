// Broken MoE models through the CLI: each is a fixture copied with GgufWriter with one thing altered,
// and `turbospark logits` must exit 1 with a message naming what is wrong (not crash, not write
// logits computed from garbage).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "moe/moe_test_util.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

class MoeErrors : public testing::Test {
 protected:
  // Copies fixture `name`, lets `edit` alter the copy, and runs `logits` on it.
  template <typename Edit>
  test::CliRun logits_of_altered(const std::string& name, Edit edit) {
    test::GgufCopy model = test::GgufCopy::read(test::models_dir() + "/" + name + ".gguf");
    edit(model);
    const std::string path = dir_.file("broken.gguf");
    model.write(path);
    const test::CliRun r = test::run_cli({"logits", "-m", path, "--tokens", test::models_dir() + "/" + name + ".tokens.txt", "-o", out_});
    EXPECT_TRUE(r.exited) << "killed by a signal";
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("error"));
    EXPECT_FALSE(std::filesystem::exists(out_)) << "logits written for a broken model";
    return r;
  }

  test::ScratchDir dir_;
  std::string out_ = dir_.file("out.f32");
};

TEST_F(MoeErrors, UnsupportedExpertFormatIsNamed) {
  // IQ4_NL is a real llama.cpp type TurboSpark has no kernel for; 32-element blocks of 18 bytes fit
  // the fixture's rows (the 256-element K-quants such as Q2_K do not fit its 64/128-wide rows).
  const test::CliRun r = logits_of_altered("qwen3moe-f32", [](test::GgufCopy& m) {
    test::GgufCopy::Tensor& t = m.tensor("blk.1.ffn_down_exps.weight");
    t.type = GgmlType::IQ4_NL;
    t.bytes.assign(t.dims[0] * t.dims[1] * t.dims[2] / 32 * 18, 0);
  });
  EXPECT_THAT(r.err, HasSubstr("blk.1.ffn_down_exps.weight"));
  EXPECT_THAT(r.err, HasSubstr("IQ4_NL"));
}

TEST_F(MoeErrors, MissingRouterTensorIsNamed) {
  const test::CliRun r = logits_of_altered("llama-moe-q8_0", [](test::GgufCopy& m) { m.remove_tensor("blk.2.ffn_gate_inp.weight"); });
  EXPECT_THAT(r.err, HasSubstr("router"));
  EXPECT_THAT(r.err, HasSubstr("blk.2.ffn_gate_inp.weight"));
}

TEST_F(MoeErrors, MoreExpertsUsedThanExist) {
  int64_t n_expert = 0;
  const test::CliRun r = logits_of_altered("gpt-oss-mxfp4", [&](test::GgufCopy& m) {
    n_expert = m.value("gpt-oss.expert_count").i;
    m.value("gpt-oss.expert_used_count").i = n_expert + 1;
  });
  EXPECT_THAT(r.err, HasSubstr(fmt::format("expert_used_count {} exceeds expert_count {}", n_expert + 1, n_expert)));
}

TEST_F(MoeErrors, NanRouterWeightsAreAnErrorNamingTheLayer) {
  // Layer 1's router is all NaN, so its logits are NaN; layer 0 routes normally.
  const test::CliRun r = logits_of_altered("qwen3moe-f32", [](test::GgufCopy& m) {
    test::GgufCopy::Tensor& t = m.tensor("blk.1.ffn_gate_inp.weight");
    ASSERT_EQ(t.type, GgmlType::F32);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 0; i < t.bytes.size(); i += sizeof(float)) std::memcpy(&t.bytes[i], &nan, sizeof(float));
  });
  EXPECT_THAT(r.err, HasSubstr("layer 1"));
  EXPECT_THAT(r.err, HasSubstr("NaN"));
}

}  // namespace
}  // namespace ts
