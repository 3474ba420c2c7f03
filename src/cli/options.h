// Options shared by the commands that load a model, registered the same way everywhere.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "backend/backend.h"

namespace ts::cli {

struct ModelOptions {
  std::string model;  // empty: the default model (fetched on first use)
  int threads = 0;    // 0: all available cores
  int64_t ctx = 4096;
  int64_t batch = 256;
  std::string precision = "int16";
  std::string kv_type = "f32";
  std::string device;  // cpu, cuda, auto; empty: $TURBOSPARK_DEVICE, else auto
};

void add_model_options(CLI::App* sub, ModelOptions& o, bool model_required);
int resolve_threads(int requested);
// The model path to load: the one given, or the default model (downloaded on first use).
std::string resolve_model(const ModelOptions& o);
// The backend for --device (and --threads, --precision, --kv-type for the CPU).
std::unique_ptr<Backend> make_backend(const ModelOptions& o);

}  // namespace ts::cli
