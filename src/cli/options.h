// Options shared by the commands that load a model, registered the same way everywhere.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace ts::cli {

struct ModelOptions {
  std::string model;  // empty: the default model (fetched on first use)
  int threads = 0;    // 0: all available cores
  int64_t ctx = 4096;
  int64_t batch = 256;
  std::string precision = "int16";
  std::string kv_type = "f32";
};

void add_model_options(CLI::App* sub, ModelOptions& o, bool model_required);
int resolve_threads(int requested);
// The model path to load: the one given, or the default model (downloaded on first use).
std::string resolve_model(const ModelOptions& o);

}  // namespace ts::cli
