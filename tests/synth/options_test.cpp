// Invalid option combinations are refused before anything is written, with a message naming the
// option; the presets have the published sizes; the CLI reports errors with exit code 1; and an
// interrupted write leaves neither OUT nor OUT.partial behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cli/cli_harness.h"
#include "synth/synth_tensors.h"
#include "synth/synth_test_util.h"
#include "util/error.h"

namespace ts::synth {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string error_of(const SynthConfig& c, const std::string& path, bool force = true) {
  ThreadPool pool(1);
  try {
    synthesize(c, path, pool, {.force = force, .progress = false});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

SynthConfig tiny(const char* family) { return preset_config(family, "tiny"); }

TEST(Options, InvalidCombinationsNameTheOptionAndWriteNothing) {
  ::ts::test::ScratchDir s;
  const std::string out = s.file("out.gguf");
  std::vector<std::pair<SynthConfig, std::string>> cases;
  SynthConfig c = tiny("llama");
  c.heads = 5;
  cases.push_back({c, "--heads 5 is not a multiple of --kv-heads 2"});
  c = tiny("mixtral");
  c.experts_used = 9;
  cases.push_back({c, "--experts-used 9 must be between 1 and --experts 8"});
  c = tiny("llama");
  c.embd = 100;
  cases.push_back({c, "tensor 'token_embd.weight' has rows of 100 elements"});
  c = tiny("llama");
  c.dense_type = GgmlType::Q4_K;  // 256-element blocks, 128-wide rows
  cases.push_back({c, "not a multiple of the Q4_K block size 256"});
  c = tiny("gpt-oss");
  c.expert_ff = 48;  // down_exps rows are expert_ff long: not whole MXFP4 blocks
  cases.push_back({c, "rows of 48 elements (--expert-ff)"});
  c = tiny("gpt-oss");
  c.experts = 0;
  cases.push_back({c, "--arch gpt-oss needs --experts > 0"});
  c = tiny("qwen3");
  c.experts = 4, c.experts_used = 2;
  cases.push_back({c, "use --arch qwen3moe"});
  c = tiny("llama");
  c.swa = 4;
  cases.push_back({c, "--swa is only used by gpt-oss"});
  c = tiny("llama");
  c.layers = 0;
  cases.push_back({c, "--layers must be between 1"});
  c = tiny("llama");
  c.dense_type = GgmlType::Q8_K;
  cases.push_back({c, "--dense-type Q8_K: synth cannot write this type"});
  c = tiny("llama");
  c.vocab_from = s.file("missing.gguf");
  cases.push_back({c, "missing.gguf"});
  for (const auto& [config, message] : cases) {
    EXPECT_THAT(error_of(config, out), HasSubstr(message));
    EXPECT_FALSE(fs::exists(out)) << message;
    EXPECT_FALSE(fs::exists(out + ".partial")) << message;
  }
}

TEST(Options, UnknownNamesAreErrors) {
  EXPECT_THROW(preset_config("falcon", "tiny"), Error);
  EXPECT_THROW(preset_config("llama", "huge"), Error);
  try {
    preset_config("qwen3moe", "20b");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("20b and 120b are gpt-oss shapes"));
  }
  EXPECT_EQ(parse_weight_type("mxfp4", "--expert-type"), GgmlType::MXFP4);
  EXPECT_EQ(parse_weight_type("Q8_0", "--dense-type"), GgmlType::Q8_0);
  EXPECT_THROW(parse_weight_type("Q9_9", "--dense-type"), Error);
  EXPECT_THROW(parse_weight_type("IQ2_XXS", "--dense-type"), Error);
}

TEST(Options, OutputPathRules) {
  ::ts::test::ScratchDir s;
  const std::string out = s.file("out.gguf");
  test::write_model(tiny("llama"), out);
  const auto before = fs::last_write_time(out);
  EXPECT_THAT(error_of(tiny("llama"), out, false), HasSubstr("file exists (pass --force"));
  EXPECT_EQ(fs::last_write_time(out), before);
  EXPECT_EQ(error_of(tiny("llama"), out, true), "");
  fs::create_directory(s.file("dir"));
  EXPECT_THAT(error_of(tiny("llama"), s.file("dir"), true), HasSubstr("is a directory"));
  EXPECT_THAT(error_of(tiny("llama"), s.file("nodir/x.gguf"), true), HasSubstr("does not exist"));
}

uint64_t planned_bytes(const SynthConfig& c) {
  uint64_t total = 0;
  for (const auto& t : plan_tensors(c)) total += t.n_elements() / type_info(t.type).block_elems * type_info(t.type).block_bytes;
  return total;
}

// The sizes the presets are specified by (Q8_0 dense incl. embeddings, MXFP4 experts).
TEST(Presets, GptOssSizes) {
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(planned_bytes(preset_config("gpt-oss", "mini")) / (1024.0 * 1024), 501.0, 1.0);
  EXPECT_NEAR(planned_bytes(preset_config("gpt-oss", "20b")) / gib, 11.27, 0.01);
  const SynthConfig big = preset_config("gpt-oss", "120b");
  EXPECT_EQ(big.layers, 36);
  EXPECT_EQ(big.experts, 128);
  EXPECT_EQ(big.vocab, 201088);
  EXPECT_EQ(big.swa, 128);
  EXPECT_EQ(big.ctx, 131072);
  EXPECT_NO_THROW(validate(big));
}

::ts::test::CliRun cli(std::vector<std::string> args) {
  args.insert(args.begin(), "synth");
  return ::ts::test::run_cli(args);
}

TEST(Cli, ReportsSuccessAndErrors) {
  ::ts::test::ScratchDir s;
  const std::string out = s.file("m.gguf");
  auto r = cli({"--arch", "qwen3", "--preset", "tiny", "--seed", "5", "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("MB/s"));
  EXPECT_TRUE(fs::exists(out));

  r = cli({"--arch", "qwen3", "-o", out});  // exists, no --force
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("file exists"));

  const std::string other = s.file("n.gguf");
  r = cli({"--arch", "llama", "--heads", "6", "--kv-heads", "4", "-o", other});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("error: --heads 6 is not a multiple of --kv-heads 4"));
  r = cli({"--arch", "gpt-oss", "--vocab", "100", "--vocab-from", out, "-o", other});
  EXPECT_THAT(r.err, HasSubstr("--vocab and --vocab-from conflict"));
  r = cli({"--arch", "gpt-oss", "--dense-type", "Q7", "-o", other});
  EXPECT_THAT(r.err, HasSubstr("--dense-type Q7: unknown weight type"));
  EXPECT_FALSE(fs::exists(other));
}

TEST(Cli, InterruptLeavesNoFileBehind) {
  ::ts::test::ScratchDir s;
  const std::string out = s.file("big.gguf");
  ::ts::test::Child child({TS_BINARY, "synth", "--arch", "gpt-oss", "--preset", "mini", "-t", "1", "-o", out});
  // Wait until the write is under way, then interrupt it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(out + ".partial") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(out + ".partial"));
  ::kill(child.pid(), SIGINT);
  const ::ts::test::ProcessResult r = child.wait();
  EXPECT_TRUE(r.exited) << "died from a signal instead of cleaning up: " << r.describe();
  EXPECT_EQ(r.code, 1);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".partial"));
}

}  // namespace
}  // namespace ts::synth
