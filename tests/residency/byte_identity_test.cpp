// `turbospark logits` gives the same bytes in every expert residency mode, cache size (down to one
// slot per layer, below one token's top-k), eviction policy, and read path (buffered and O_DIRECT),
// from the GGUF and from its install directory (turbospark pack), on both the prefill and the decode
// path, for every MoE fixture. Cold and warm: each process starts with an empty cache, and the
// decode path re-uses what the earlier tokens brought in.
#include <gtest/gtest.h>

#include "cli/cli_harness.h"
#include "gguf/gguf.h"
#include "moe/moe_test_util.h"

namespace ts {
namespace {

using test::Fixture;

std::string fixture_name(const testing::TestParamInfo<Fixture>& p) { return test::test_name(p.param.name); }

class ByteIdentity : public testing::TestWithParam<Fixture> {
 protected:
  std::vector<float> logits(const std::string& model, const std::vector<std::string>& extra, bool sequential) {
    std::vector<std::string> args = {"logits", "-m", model, "--tokens", GetParam().tokens(), "-o", dir_.file("out.f32")};
    if (sequential) args.push_back("--sequential");
    args.insert(args.end(), extra.begin(), extra.end());
    const test::CliRun r = test::run_cli(args);
    EXPECT_TRUE(r.exited && r.code == 0) << r.err;
    return r.code == 0 ? test::read_floats(dir_.file("out.f32")) : std::vector<float>{};
  }
  test::ScratchDir dir_;
};

TEST_P(ByteIdentity, EveryResidencyModeAndCacheSizeGivesTheSameLogits) {
  const auto g = GgufFile::open(GetParam().gguf());
  const std::string arch = g->get_string("general.architecture");
  const int64_t n_expert = g->get_int(arch + ".expert_count"), k = g->get_int(arch + ".expert_used_count");
  const std::string kk = std::to_string(k), half = std::to_string(n_expert / 2), all = std::to_string(n_expert);
  const std::vector<std::vector<std::string>> configs = {
      {"--expert-residency", "resident"},
      {"--expert-residency", "resident", "--direct-io"},
      {"--expert-residency", "auto"},
      {"--expert-residency", "streamed", "--expert-cache-slots", "1"},
      {"--expert-residency", "streamed", "--expert-cache-slots", "1", "--expert-prefetch", "off"},
      {"--expert-residency", "streamed", "--expert-cache-slots", kk},
      {"--expert-residency", "streamed", "--expert-cache-slots", half, "--expert-policy", "lru"},
      {"--expert-residency", "streamed", "--expert-cache-slots", all},
      {"--expert-residency", "streamed", "--expert-cache-slots", "2", "--direct-io", "--expert-read-chunk-kb", "4"},
      {"--expert-residency", "streamed", "--expert-cache-slots", kk, "--expert-policy", "lru", "--direct-io"},
      {"--expert-residency", "streamed", "--expert-cache-slots", all, "--expert-prefetch", "on"},
      {"--expert-residency", "streamed", "--expert-cache-mb", "1"},
  };
  const std::vector<float> want = logits(GetParam().gguf(), {"--expert-residency", "mapped"}, false);
  ASSERT_FALSE(want.empty());
  const std::string install = dir_.file("install");
  const test::CliRun packed = test::run_cli({"pack", GetParam().gguf(), "-o", install});
  ASSERT_EQ(packed.code, 0) << packed.err;
  for (const std::string& model : {GetParam().gguf(), install}) {
    std::vector<std::vector<std::string>> all = configs;
    if (model == install) all.push_back({"--expert-residency", "mapped"});
    for (bool sequential : {false, true})
      for (const auto& c : all) {
        std::string name = model + (sequential ? " --sequential" : "");
        for (const auto& a : c) name += " " + a;
        EXPECT_TRUE(test::same_bytes(logits(model, c, sequential), want)) << name;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ByteIdentity, testing::ValuesIn(test::moe_fixtures()), fixture_name);

}  // namespace
}  // namespace ts
