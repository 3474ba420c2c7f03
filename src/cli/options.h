// Options shared by the commands that load a model, registered the same way everywhere.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "model/model.h"

namespace ts::cli {

struct ModelOptions {
  std::string model;  // empty: the default model (fetched on first use)
  int threads = 0;    // 0: all available cores
  int64_t ctx = 4096;
  int64_t batch = 0;  // 0: the backend's (Backend::prefill_batch)
  // Routed experts (MoE models).
  std::string residency = "auto";
  int64_t cache_mb = 0, cache_slots = 0, memory_budget_mb = 0;
  std::string policy = "lfu";
  bool direct_io = false;
  std::string prefetch = "auto";
  double host_share = -1;
  int reader_threads = 0;
  int64_t read_chunk_kb = 0;
  // Instrumentation.
  bool phases = false;
  std::string phases_json, router_hist;
  bool router_trace = false;
  std::string precision = "int8";
  std::string kv_type = "auto";
  std::string device;  // cpu, cuda, auto; empty: $TURBOSPARK_DEVICE, else auto
};

void add_model_options(CLI::App* sub, ModelOptions& o, bool model_required);
int resolve_threads(int requested);
// The model path to load: the one given, or the default model (downloaded on first use).
std::string resolve_model(const ModelOptions& o);
// The backend for --device (and --threads, --precision, --kv-type for the CPU).
std::unique_ptr<Backend> make_backend(const ModelOptions& o);
// --batch, or the backend's prefill batch when none is given.
int64_t resolve_batch(const ModelOptions& o, const Backend& be);
// How to load it on `be`: the expert residency options, and the run's shape for the auto budget.
LoadOptions load_options(const ModelOptions& o, const Backend& be, int64_t logit_rows);
// --kv-type: auto is f16 on the int16 and int8 paths (half the bytes attention reads at depth, and
// still far closer to the exact result than llama.cpp; see docs/BENCHMARKS.md) and f32 on the exact
// path, which is defined with an f32 cache.
KvType kv_type_for(const ModelOptions& o);

}  // namespace ts::cli
