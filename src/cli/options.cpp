#include "cli/options.h"

#include <thread>

#include "runtime/model_cache.h"

namespace ts::cli {

void add_model_options(CLI::App* sub, ModelOptions& o, bool model_required) {
  auto* m = sub->add_option("-m,--model", o.model, model_required ? "GGUF model file" : "GGUF model file (default: the embedded default model, SmolLM2-135M-Instruct, fetched on first use)");
  if (model_required) m->required();
  sub->add_option("-t,--threads", o.threads, "worker threads (default: all cores)")->check(CLI::Range(0, 1024));
  sub->add_option("--ctx", o.ctx, "context size in tokens (KV cache positions)")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--batch", o.batch, "tokens per forward call in prefill")->check(CLI::Range(int64_t{1}, int64_t{8192}));
  sub->add_option("--precision", o.precision,
                  "matmul activations: int16 (default), exact (f32: the reference path) or int8 (llama.cpp's scheme)")
      ->check(CLI::IsMember({"int16", "exact", "int8"}));
  sub->add_option("--kv-type", o.kv_type, "KV cache element type: f32 (default) or f16 (half the memory; not with --precision exact)")
      ->check(CLI::IsMember({"f32", "f16"}));
}

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

std::string resolve_model(const ModelOptions& o) { return o.model.empty() ? default_model_path() : o.model; }

}  // namespace ts::cli
