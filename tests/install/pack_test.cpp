// `turbospark pack` and `turbospark verify` on every MoE fixture: the manifest records the format,
// architecture, hyper-parameters and every file's size and SHA-256; each expert is one 4 KiB-aligned
// blob whose parts are the GGUF's bytes verbatim; a truncated or altered install is refused naming
// the file; the resident GGUF alone is refused with a pointer to the directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "gguf/gguf.h"
#include "install/manifest.h"
#include "moe/moe_test_util.h"
#include "util/sha256.h"

namespace ts {
namespace {

using ::testing::HasSubstr;
using test::Fixture;
namespace fs = std::filesystem;

std::string fixture_name(const testing::TestParamInfo<Fixture>& p) { return test::test_name(p.param.name); }

class Pack : public testing::TestWithParam<Fixture> {
 protected:
  void SetUp() override {
    const test::CliRun r = test::run_cli({"pack", GetParam().gguf(), "-o", out_});
    ASSERT_TRUE(r.exited && r.code == 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("pack: wrote"));
  }
  test::CliRun verify() { return test::run_cli({"verify", out_}); }
  test::ScratchDir dir_;
  std::string out_ = dir_.file("install");
};

TEST_P(Pack, ManifestRecordsFormatModelAndEveryFile) {
  const auto j = nlohmann::json::parse(test::read_text(out_ + "/manifest.json"));
  const auto g = GgufFile::open(GetParam().gguf());
  const std::string arch = g->get_string("general.architecture");
  EXPECT_EQ(j["format"], "turbospark-install");
  EXPECT_EQ(j["version"], kInstallVersion);
  EXPECT_EQ(j["architecture"], arch);
  EXPECT_EQ(j["hparams"]["block_count"], g->get_int(arch + ".block_count"));
  EXPECT_EQ(j["hparams"]["expert_count"], g->get_int(arch + ".expert_count"));
  EXPECT_EQ(j["hparams"]["embedding_length"], g->get_int(arch + ".embedding_length"));
  std::set<std::string> listed;
  for (const auto& f : j["files"]) {
    const std::string path = out_ + "/" + f["path"].get<std::string>();
    EXPECT_EQ(fs::file_size(path), f["bytes"].get<uint64_t>()) << path;
    EXPECT_EQ(sha256_file(path), f["sha256"].get<std::string>()) << path;
    listed.insert(f["path"].get<std::string>());
  }
  std::set<std::string> on_disk;
  for (const auto& e : fs::recursive_directory_iterator(out_))
    if (e.is_regular_file() && e.path().filename() != "manifest.json") on_disk.insert(fs::relative(e.path(), out_).string());
  EXPECT_EQ(listed, on_disk);
  EXPECT_EQ(j["experts"]["layers"].size(), static_cast<size_t>(g->get_int(arch + ".block_count")));
}

TEST_P(Pack, EachExpertIsOneAlignedBlobOfTheSourceBytes) {
  const InstallManifest m = read_manifest(out_);
  const auto g = GgufFile::open(GetParam().gguf());
  for (const InstallLayer& l : m.layers) {
    const std::string bytes = test::read_text(m.path(l.file));
    EXPECT_EQ(l.blob_bytes % 4096, 0u);
    for (int64_t e = 0; e < m.n_expert; ++e) {
      const uint64_t at = l.offsets[e];
      EXPECT_EQ(at % 4096, 0u);
      for (int p = 0; p < kExpertParts; ++p) {
        const InstallPart& ip = l.parts[p];
        if (!ip.bytes) continue;
        EXPECT_EQ(ip.offset % 4096, 0u);
        const GgufTensor& t = g->tensor(ip.tensor);
        EXPECT_EQ(ip.type, t.type);
        ASSERT_EQ(0, std::memcmp(bytes.data() + at + ip.offset, t.data + e * ip.bytes, ip.bytes))
            << ip.tensor << " expert " << e << " is not the GGUF's bytes verbatim";
      }
    }
  }
}

TEST_P(Pack, VerifyAcceptsTheInstallAndNamesAnAlteredFile) {
  test::CliRun r = verify();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok"));
  // One flipped byte inside an expert of the last layer: sizes agree, the hash does not.
  const InstallManifest m = read_manifest(out_);
  const std::string victim = m.layers.back().file;
  {
    std::fstream f(out_ + "/" + victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    f.seekp(100);
    f.write(&c, 1);
  }
  r = verify();
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(victim));
  EXPECT_THAT(r.err, HasSubstr("SHA-256"));
}

TEST_P(Pack, ATruncatedInstallIsRefusedNamingTheFile) {
  const InstallManifest m = read_manifest(out_);
  const std::string victim = m.layers.front().file;
  fs::resize_file(out_ + "/" + victim, fs::file_size(out_ + "/" + victim) - 4096);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"verify", out_},
        std::vector<std::string>{"logits", "-m", out_, "--tokens", GetParam().tokens(), "-o", dir_.file("o.f32")}}) {
    const test::CliRun r = test::run_cli(args);
    EXPECT_EQ(r.code, 1) << args[0];
    EXPECT_THAT(r.err, HasSubstr(victim)) << args[0];
    EXPECT_THAT(r.err, HasSubstr("truncated")) << args[0];
  }
  EXPECT_FALSE(fs::exists(dir_.file("o.f32")));
}

TEST_P(Pack, InspectDescribesTheInstallAndItsResidentTensors) {
  const test::CliRun r = test::run_cli({"inspect", out_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("install: " + out_));
  EXPECT_THAT(r.out, HasSubstr("format version 1"));
  EXPECT_THAT(r.out, HasSubstr("token_embd.weight"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("_exps.weight")));
}

TEST_P(Pack, TheResidentFileAloneIsRefusedWithAPointerToTheDirectory) {
  const test::CliRun r = test::run_cli({"logits", "-m", out_ + "/resident.gguf", "--tokens", GetParam().tokens(), "-o", dir_.file("o.f32")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("install directory"));
}

TEST_P(Pack, AnExistingOutputIsReplacedOnlyWithForceAndOnlyIfItIsAnInstall) {
  test::CliRun r = test::run_cli({"pack", GetParam().gguf(), "-o", out_});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("--force"));
  r = test::run_cli({"pack", GetParam().gguf(), "-o", out_, "--force"});
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string other = dir_.file("other");
  fs::create_directories(other);
  test::write_text(other + "/keep.txt", "precious");
  r = test::run_cli({"pack", GetParam().gguf(), "-o", other, "--force"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("not an install directory"));
  EXPECT_EQ(test::read_text(other + "/keep.txt"), "precious");
}

INSTANTIATE_TEST_SUITE_P(Models, Pack, testing::ValuesIn(test::moe_fixtures()), fixture_name);

TEST(PackErrors, ADenseModelHasNothingToPack) {
  test::ScratchDir dir;
  const test::CliRun r = test::run_cli({"pack", test::models_dir() + "/llama-dense-q8_0.gguf", "-o", dir.file("x")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("no routed experts"));
  EXPECT_FALSE(fs::exists(dir.file("x")));
  EXPECT_FALSE(fs::exists(dir.file("x.partial")));
}

}  // namespace
}  // namespace ts
