// Capture and steering through the CLI: one snapshot per generation whatever the number of generated
// tokens, every position with --capture-all, nothing written when nothing was captured, and bad
// options or files as clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

nlohmann::json header(const std::string& path) { return nlohmann::json::parse(test::read_text(path)); }

TEST(CaptureCli, RunCapturesTheLastPromptTokenOncePerGeneration) {
  test::ScratchDir dir;
  for (const char* n : {"1", "12"}) {
    const auto r = test::run_cli({"run", "-p", "The capital of France is", "-n", n, "--temp", "0", "-t", "2",
                                  "--capture-residual", dir.file(std::string("c") + n + ".json")});
    ASSERT_TRUE(r.exited && r.code == 0) << r.err;
  }
  const auto a = header(dir.file("c1.json")), b = header(dir.file("c12.json"));
  EXPECT_EQ(a["snapshots"], 1);
  EXPECT_EQ(a["layers"], 30);
  EXPECT_EQ(a["hidden"], 576);
  EXPECT_EQ(a["layout"], "[snapshot][layer][hidden]");
  EXPECT_EQ(a["positions"], b["positions"]);
  EXPECT_EQ(test::read_text(dir.file("c1.f32")).size(), 30u * 576 * 4);
  EXPECT_EQ(test::read_text(dir.file("c1.f32")), test::read_text(dir.file("c12.f32")));
}

TEST(CaptureCli, LogitsCapturesEveryPositionAndKeepsTheLogits) {
  test::ScratchDir dir;
  const test::Fixture f{"gpt-oss-mxfp4", test::models_dir()};
  auto plain = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", dir.file("a.f32")});
  auto cap = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", dir.file("b.f32"), "--capture-all",
                            "--capture-residual", dir.file("cap.json"), "--batch", "9"});
  ASSERT_TRUE(plain.exited && plain.code == 0 && cap.exited && cap.code == 0) << cap.err;
  EXPECT_EQ(test::read_text(dir.file("a.f32")), test::read_text(dir.file("b.f32")));
  const auto h = header(dir.file("cap.json"));
  EXPECT_EQ(h["snapshots"], 40);
  EXPECT_EQ(h["positions"][39], 39);
  EXPECT_EQ(test::read_text(dir.file("cap.f32")).size(), 40u * 4 * 128 * 4);
}

TEST(CaptureCli, NothingIsWrittenWhenNothingWasCaptured) {
  test::ScratchDir dir;
  const test::Fixture f{"llama-dense-f32", test::models_dir()};
  const auto r = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", dir.file("a.f32"),
                                "--capture-residual", dir.file("cap.json"), "--steering", dir.file("missing.gguf")});
  EXPECT_TRUE(r.exited);
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("missing.gguf"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("cap.json")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("cap.f32")));
}

TEST(SteeringCli, BadOptionsAreClearErrors) {
  test::ScratchDir dir;
  const test::Fixture f{"llama-dense-f32", test::models_dir()};
  const std::string v = std::string(TS_TEST_DATA) + "/steering/llama-dense-a.cvec.gguf";
  auto mode = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", dir.file("a.f32"), "--steering", v,
                             "--steering-mode", "subtract"});
  EXPECT_TRUE(mode.exited && mode.code != 0);
  EXPECT_THAT(mode.err, HasSubstr("unknown steering mode 'subtract'"));
  auto layers = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", dir.file("a.f32"), "--steering", v,
                               "--steering-layers", "2-3"});
  EXPECT_TRUE(layers.exited && layers.code != 0);
  EXPECT_THAT(layers.err, HasSubstr("expected START:END"));
  // A vector made for the default model (576 wide) on a 128-wide fixture.
  auto wrong_model = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", dir.file("a.f32"), "--steering",
                                    std::string(TS_TEST_DATA) + "/steering/smollm2-happy.cvec.gguf:0.3"});
  EXPECT_TRUE(wrong_model.exited && wrong_model.code != 0);
  EXPECT_THAT(wrong_model.err, HasSubstr("smollm2-happy.cvec.gguf': tensor 'direction.1' has 576 values, the model's width is 128"));
}

}  // namespace
}  // namespace ts
