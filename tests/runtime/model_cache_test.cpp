// One cache directory for everything (issue 10, item 9): the default model, `turbospark fetch` and
// the real-model tests all resolve it through cache_dir(), which honours $TURBOSPARK_CACHE, then
// $XDG_CACHE_HOME, then ~/.cache. (The tests used to look in ~/.cache/turbospark whatever the
// fetchers had been told.)
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "cli/cli_harness.h"
#include "runtime/model_cache.h"
#include "util/error.h"

namespace ts {
namespace {

// Sets or unsets an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ModelCache, OneResolverHonoursTheEnvironment) {
  {
    ScopedEnv a("TURBOSPARK_CACHE", "/tmp/ts-cache"), b("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(cache_dir(), "/tmp/ts-cache");
    EXPECT_EQ(cached_model_path("m.gguf"), "/tmp/ts-cache/models/m.gguf");
  }
  {
    ScopedEnv a("TURBOSPARK_CACHE", nullptr), b("XDG_CACHE_HOME", "/tmp/xdg"), c("HOME", "/home/u");
    EXPECT_EQ(cache_dir(), "/tmp/xdg/turbospark");
  }
  {
    ScopedEnv a("TURBOSPARK_CACHE", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", "/home/u");
    EXPECT_EQ(cache_dir(), "/home/u/.cache/turbospark");
  }
}

TEST(ModelCache, KnownModelsMatchTheTestData) {
  EXPECT_EQ(known_model("smollm2-135m-instruct").file, "SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_EQ(known_model("gemma-3-270m").file, "gemma-3-270m-q4_k_m.gguf");
  EXPECT_THROW(known_model("nope"), Error);
  // `turbospark fetch` reports the cache the environment names, the one the tests read.
  test::ProcessOptions opt;
  opt.env = {"TURBOSPARK_CACHE=/tmp/ts-cache-probe"};
  const test::CliRun r = test::run_cli({"fetch", "--help"}, opt);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("/tmp/ts-cache-probe/models"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ts
