// The memory check before a run (issue 10, item 3): the estimate stays above what a run really
// takes, and a run that does not fit is refused up front with the sizes, whether the limit is
// MemAvailable, a cgroup limit or the address space (`ulimit -v`), instead of failing part-way with
// a bare "out of memory".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "cli/cli_harness.h"
#include "model/memory_estimate.h"
#include "model/model.h"
#include "runtime/token_file.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // ASan reserves terabytes of address space: no `ulimit -v` runs
#else
constexpr bool kSanitized = false;
#endif

std::string check_error(const MemoryEstimate& e, const MemoryLimits& lim, uint64_t rss, uint64_t vm) {
  try {
    check_run_memory(e, lim, rss, vm);
  } catch (const Error& x) {
    return x.what();
  }
  return "";
}

constexpr uint64_t GiB = uint64_t{1} << 30;

TEST(MemoryEstimate, RefusesWithTheSizesWhateverTheLimit) {
  MemoryEstimate e;
  e.weights = GiB;
  e.kv_cache = 3 * GiB;
  e.n_ctx = 65536;
  e.batch = 256;
  MemoryLimits lim;
  lim.mem_total = 16 * GiB;
  lim.mem_available = 2 * GiB;
  EXPECT_THAT(check_error(e, lim, 0, 0),
              AllOf(HasSubstr("not enough memory"), HasSubstr("KV cache 3.00 GiB for 65536 positions"), HasSubstr("MemAvailable 2.00 GiB")));
  lim.mem_available = 12 * GiB;
  EXPECT_EQ(check_error(e, lim, 0, 0), "");
  lim.cgroup_limit = 3 * GiB;
  EXPECT_THAT(check_error(e, lim, 0, 0), HasSubstr("cgroup limit 3.00 GiB"));
  lim.cgroup_limit = 0;
  lim.address_space_limit = 4 * GiB;
  // The model is mapped already (it is inside vm): 3 GiB of KV cache plus slack must fit in what is left.
  EXPECT_EQ(check_error(e, lim, 0, 512u << 20), "");
  EXPECT_THAT(check_error(e, lim, 0, 2 * GiB), AllOf(HasSubstr("address-space limit"), HasSubstr("leaves 2.00 GiB")));
}

// A run's peak resident memory stays below the estimate (plus the process's own baseline), so the
// estimate mirrors the buffers the forward pass really allocates.
TEST(MemoryEstimate, CoversWhatARunTakes) {
  for (const char* name : {"llama-dense-f32", "qwen3moe-f32", "gpt-oss-mxfp4"}) {
    SCOPED_TRACE(name);
    const test::Fixture f{name, test::models_dir()};
    auto be = make_cpu_backend(1);
    auto model = Model::load(f.gguf(), *be);
    const int64_t n = static_cast<int64_t>(read_token_file(f.tokens()).size());
    const MemoryEstimate e = estimate_run_memory(*model, n, n, n);
    test::ScratchDir dir;
    const test::CliRun r = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", dir.file("o.f32"), "-t", "1"});
    ASSERT_EQ(r.code, 0) << r.err;
    const uint64_t baseline = kSanitized ? 512u << 20 : 48u << 20;  // binary, libraries, allocator
    EXPECT_LE(static_cast<uint64_t>(r.max_rss_kb) * 1024, e.resident() + baseline) << e.describe();
  }
}

// Under `ulimit -v`, a teacher-forced run too big for the address space is refused before it
// allocates, with the sizes; a run that fits still runs.
TEST(MemoryEstimate, AddressSpaceLimitIsCheckedUpFront) {
  if (kSanitized) GTEST_SKIP() << "ASan reserves terabytes of address space";
  test::ScratchDir dir;
  const test::Fixture f{"llama-dense-q8_0", test::models_dir()};
  test::ProcessOptions limited;
  limited.address_space_limit = GiB;
  const test::CliRun ok = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", dir.file("o.f32"), "-t", "2"}, limited);
  EXPECT_EQ(ok.code, 0) << ok.err;
  const std::string many = dir.file("many.txt");
  {
    std::ofstream out(many);
    for (int i = 0; i < 300000; ++i) out << i % 1000 << '\n';
  }
  const test::CliRun r =
      test::run_cli({"logits", "-m", f.gguf(), "--tokens", many, "-o", dir.file("o.f32"), "-t", "2", "--ctx", "300000"}, limited);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("address-space limit"), HasSubstr("KV cache 439.5 MiB for 300000 positions"),
                           HasSubstr("logits 1.14 GiB")));
  EXPECT_LT(r.seconds, 10);
}

}  // namespace
}  // namespace ts
