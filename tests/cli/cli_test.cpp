// The command line as a user meets it: usage errors and bad inputs exit non-zero with a message
// (never a crash, never a half-written output), --help works for every subcommand, and `inspect`
// shows a model's architecture and tensor table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "cli/cli_harness.h"
#include "gguf/gguf.h"

namespace ts {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kModel = test::models_dir() + "/llama-dense-q8_0.gguf";
const std::string kTokens = test::models_dir() + "/llama-dense-q8_0.tokens.txt";

class Cli : public testing::Test {
 protected:
  // A usage error (caught by the option parser) points to --help.
  void expect_usage_error(const test::CliRun& r) {
    EXPECT_TRUE(r.exited) << "killed by a signal";
    EXPECT_NE(r.code, 0);
    EXPECT_THAT(r.err, HasSubstr("--help"));
  }
  // A runtime error exits 1 with "turbospark: error: ..." and writes no output file.
  void expect_runtime_error(const test::CliRun& r, const std::string& what) {
    EXPECT_TRUE(r.exited) << "killed by a signal";
    EXPECT_EQ(r.code, 1);
    EXPECT_THAT(r.err, HasSubstr("error"));
    EXPECT_THAT(r.err, HasSubstr(what));
    EXPECT_FALSE(std::filesystem::exists(out_)) << "output written despite the error";
  }
  test::CliRun logits(const std::string& model, const std::string& tokens, const std::string& out) {
    return test::run_cli({"logits", "-m", model, "--tokens", tokens, "-o", out});
  }
  test::CliRun logits_of_tokens(const std::string& text) {
    const std::string path = dir_.file("tokens.txt");
    test::write_text(path, text);
    return logits(kModel, path, out_);
  }

  test::ScratchDir dir_;
  std::string out_ = dir_.file("out.f32");
};

TEST_F(Cli, MissingOrUnknownSubcommandIsAUsageError) {
  expect_usage_error(test::run_cli({}));
  expect_usage_error(test::run_cli({"frobnicate"}));
}

TEST_F(Cli, LogitsWithoutModelIsAUsageError) {
  const test::CliRun r = test::run_cli({"logits", "--tokens", kTokens, "-o", out_});
  expect_usage_error(r);
  EXPECT_THAT(r.err, HasSubstr("--model"));
}

TEST_F(Cli, UnknownLogitsOptionValueIsAUsageError) {
  const test::CliRun r =
      test::run_cli({"logits", "-m", kModel, "--tokens", kTokens, "-o", out_, "--expert-order", "random"});
  expect_usage_error(r);
  EXPECT_THAT(r.err, HasSubstr("random"));
}

TEST_F(Cli, HostShareOutsideZeroToOneOrWithoutAStreamedCacheIsRefused) {
  for (const char* share : {"1.5", "-0.1", "half"}) {
    const test::CliRun r = test::run_cli({"logits", "-m", kModel, "--tokens", kTokens, "-o", out_, "--expert-residency",
                                          "streamed", "--expert-host-share", share});
    expect_usage_error(r);
    EXPECT_THAT(r.err, HasSubstr("--expert-host-share")) << share;
  }
  const test::CliRun r = test::run_cli({"logits", "-m", kModel, "--tokens", kTokens, "-o", out_, "--expert-host-share", "0.5"});
  expect_runtime_error(r, "--expert-host-share splits the misses of a streamed cache");
  // On the CPU the host computes every expert: the option would do nothing there.
  const std::string moe = test::models_dir() + "/gpt-oss-mxfp4";
  const test::CliRun cpu = test::run_cli({"logits", "-m", moe + ".gguf", "--tokens", moe + ".tokens.txt", "-o", out_, "--device",
                                          "cpu", "--expert-residency", "streamed", "--expert-cache-slots", "2",
                                          "--expert-host-share", "0.5"});
  expect_runtime_error(cpu, "on the CPU backend the host computes every expert already");
}

TEST_F(Cli, NonIntegerTokenLineNamesTheLine) {
  const test::CliRun r = logits_of_tokens("12\n7x\n5\n");
  expect_runtime_error(r, "line 2");
  EXPECT_THAT(r.err, HasSubstr("'7x'"));
}

TEST_F(Cli, NegativeTokenIdIsRejected) { expect_runtime_error(logits_of_tokens("3\n-3\n"), "'-3' is not a token id"); }

TEST_F(Cli, EmptyTokenFileIsRejected) {
  expect_runtime_error(logits_of_tokens(""), "no token ids");
  expect_runtime_error(logits_of_tokens("\n  \n"), "no token ids");
}

TEST_F(Cli, TokenIdOutsideTheVocabularyIsRejected) {
  const int64_t vocab = GgufFile::open(kModel)->get_int("llama.vocab_size");
  const test::CliRun last_ok = logits_of_tokens(fmt::format("1\n{}\n", vocab - 1));
  EXPECT_EQ(last_ok.code, 0) << last_ok.err;
  std::filesystem::remove(out_);
  const test::CliRun r = logits_of_tokens(fmt::format("1\n{}\n", vocab));
  expect_runtime_error(r, "out of range");
  EXPECT_THAT(r.err, HasSubstr(std::to_string(vocab)));
}

// The README: exceeding --ctx is an error. `logits` used to raise the context to the token count.
TEST_F(Cli, MoreTokensThanTheContextIsAnError) {
  const test::CliRun r = test::run_cli({"logits", "-m", kModel, "--tokens", kTokens, "-o", out_, "--ctx", "39"});
  expect_runtime_error(r, "holds 40 tokens but the context is 39 (--ctx)");
  EXPECT_EQ(test::run_cli({"logits", "-m", kModel, "--tokens", kTokens, "-o", out_, "--ctx", "40"}).code, 0);
}

TEST_F(Cli, MissingTokenFileIsNamed) {
  expect_runtime_error(logits(kModel, dir_.file("nope.txt"), out_), dir_.file("nope.txt"));
}

TEST_F(Cli, NonexistentModelIsNamed) {
  expect_runtime_error(logits(dir_.file("missing.gguf"), kTokens, out_), dir_.file("missing.gguf"));
}

TEST_F(Cli, DirectoryAsModelIsAnError) { expect_runtime_error(logits(dir_.path(), kTokens, out_), dir_.path()); }

TEST_F(Cli, OutputInNonexistentDirectoryIsNamed) {
  const std::string out = dir_.file("no/such/dir/out.f32");
  const test::CliRun r = logits(kModel, kTokens, out);
  expect_runtime_error(r, out);
}

TEST_F(Cli, HelpWorksForEverySubcommand) {
  for (const char* sub : {"run", "chat", "inspect", "logits", "synth"}) {
    SCOPED_TRACE(sub);
    const test::CliRun r = test::run_cli({sub, "--help"});
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(std::string("turbospark ") + sub));
    EXPECT_THAT(r.out, HasSubstr("--help"));
  }
  const test::CliRun top = test::run_cli({"--help"});
  EXPECT_EQ(top.code, 0);
  for (const char* sub : {"run", "chat", "inspect", "logits", "synth"}) EXPECT_THAT(top.out, HasSubstr(sub));
}

TEST_F(Cli, InspectPrintsArchitectureAndTensorTable) {
  for (const char* name : {"gpt-oss-mxfp4", "llama-dense-q4_k_m"}) {
    SCOPED_TRACE(name);
    const std::string path = test::models_dir() + "/" + name + ".gguf";
    const test::CliRun r = test::run_cli({"inspect", path});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto g = GgufFile::open(path);
    EXPECT_THAT(r.out, HasSubstr("architecture: " + g->get_string("general.architecture") + "\n"));
    EXPECT_THAT(r.out, Not(HasSubstr("cannot run this model")));
    // One line per tensor: name, type, [dims].
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    for (const GgufTensor& t : g->tensors()) {
      const auto it = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(fmt::format(" {} ", t.name)) != std::string::npos; });
      ASSERT_NE(it, lines.end()) << t.name << " not listed";
      EXPECT_THAT(*it, HasSubstr(fmt::format(" {} ", type_name(t.type))));
      EXPECT_THAT(*it, HasSubstr(fmt::format("[{}]", fmt::join(t.dims, ", "))));
    }
  }
}

}  // namespace
}  // namespace ts
