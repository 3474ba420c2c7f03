#include "cli/options.h"

#include <cstdlib>
#include <thread>

#include "runtime/model_cache.h"
#include "util/error.h"

namespace ts::cli {

void add_model_options(CLI::App* sub, ModelOptions& o, bool model_required) {
  auto* m = sub->add_option("-m,--model", o.model, model_required ? "GGUF model file or install directory (turbospark pack)" : "GGUF model file or install directory (default: the embedded default model, SmolLM2-135M-Instruct, fetched on first use)");
  if (model_required) m->required();
  sub->add_option("-t,--threads", o.threads, "worker threads (default: all cores)")->check(CLI::Range(0, 1024));
  sub->add_option("--ctx", o.ctx, "context size in tokens (KV cache positions)")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--batch", o.batch, "tokens per forward call in prefill (default: 256 on the CPU, 2048 with CUDA)")->check(CLI::Range(int64_t{1}, int64_t{8192}));

  const char* g = "Expert residency (MoE models)";
  sub->add_option("--expert-residency", o.residency,
                  "where routed experts live: resident (loaded up front), mapped (in place, the OS decides), streamed "
                  "(a slot cache filled from disk; with --device cuda, device slots filled from pinned host memory), auto "
                  "(resident if it fits the memory budget, else streamed)")
      ->check(CLI::IsMember({"auto", "resident", "mapped", "streamed"}))->group(g)->capture_default_str();
  sub->add_option("--expert-cache-mb", o.cache_mb, "streamed: expert cache size over all layers (default: what the budget allows)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))->group(g);
  sub->add_option("--expert-cache-slots", o.cache_slots, "streamed: expert cache slots per layer")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->group(g);
  sub->add_option("--memory-budget-mb", o.memory_budget_mb, "memory the process may use (default: the cgroup limit and MemAvailable)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))->group(g);
  sub->add_option("--expert-policy", o.policy, "streamed: eviction policy")->check(CLI::IsMember({"lfu", "lru"}))->group(g)->capture_default_str();
  sub->add_flag("--direct-io", o.direct_io, "read experts with O_DIRECT (bypassing the page cache)")->group(g);
  sub->add_option("--expert-prefetch", o.prefetch,
                  "streamed: read the next layer's predicted experts ahead (auto: on the CPU when the cache holds at "
                  "most half of each layer's experts; off with --device cuda)")
      ->check(CLI::IsMember({"auto", "on", "off"}))->group(g)->capture_default_str();
  sub->add_option("--expert-host-share", o.host_share,
                  "streamed with --device cuda: the share of each layer's misses that the host's cores compute from "
                  "the pinned copy while the others are copied (0 to 1; default 0.25 with at least 16 threads, else 0)")
      ->check(CLI::Range(0.0, 1.0))->group(g);
  sub->add_option("--expert-readers", o.reader_threads, "expert reader threads (default 4)")->check(CLI::Range(1, 64))->group(g);
  sub->add_option("--expert-read-chunk-kb", o.read_chunk_kb, "bytes per expert read, in KiB (a multiple of 4; default 1024)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20))->group(g);

  const char* ig = "Instrumentation";
  sub->add_flag("--phases", o.phases, "print wall-clock phases, expert hits and bytes read after the run (also TURBOSPARK_PHASES=1)")->group(ig);
  sub->add_option("--phases-json", o.phases_json, "write the same figures as JSON to this file")->group(ig);
  sub->add_option("--router-hist", o.router_hist, "write how often each expert was selected, per layer, as JSON")->group(ig);
  sub->add_flag("--router-trace", o.router_trace, "with --router-hist: also the selected experts of every token")->group(ig);
  sub->add_option("--precision", o.precision,
                  "CPU matmul activations: int8 (default: 8-bit codes in the FFNs, int16 elsewhere; fast prefill), int16 (int16 codes everywhere) or exact (f32: the reference path)")
      ->check(CLI::IsMember({"int8", "int16", "exact"}));
  sub->add_option("--kv-type", o.kv_type,
                  "CPU KV cache element type: auto (default: f16, or f32 with --precision exact), f32, or f16 (not with --precision exact)")
      ->check(CLI::IsMember({"auto", "f32", "f16"}));
  sub->add_option("--device", o.device, "cpu, cuda, or auto: CUDA when a device is present (default: $TURBOSPARK_DEVICE, else auto)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
}

KvType kv_type_for(const ModelOptions& o) {
  if (o.kv_type != "auto") return parse_kv_type(o.kv_type);
  return parse_precision(o.precision) == Precision::Exact ? KvType::F32 : KvType::F16;
}

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

std::string resolve_model(const ModelOptions& o) { return o.model.empty() ? default_model_path() : o.model; }

std::unique_ptr<Backend> make_backend(const ModelOptions& o) {
  std::string device = o.device;
  if (device.empty()) {
    const char* env = std::getenv("TURBOSPARK_DEVICE");
    device = env && *env ? env : "auto";
  }
  return ts::make_backend(device, resolve_threads(o.threads), parse_precision(o.precision), kv_type_for(o));
}

int64_t resolve_batch(const ModelOptions& o, const Backend& be) { return o.batch ? o.batch : be.prefill_batch(); }

LoadOptions load_options(const ModelOptions& o, const Backend& be, int64_t logit_rows) {
  LoadOptions l;
  ResidencyOptions& r = l.experts;
  r.mode = o.residency == "resident"   ? ResidencyMode::Resident
           : o.residency == "mapped"   ? ResidencyMode::Mapped
           : o.residency == "streamed" ? ResidencyMode::Streamed
                                       : ResidencyMode::Auto;
  if ((o.cache_mb || o.cache_slots) && r.mode != ResidencyMode::Streamed)
    fail("--expert-cache-mb and --expert-cache-slots size the streamed cache: add --expert-residency streamed");
  if (o.cache_mb && o.cache_slots) fail("give --expert-cache-mb or --expert-cache-slots, not both");
  if (o.host_share >= 0 && r.mode != ResidencyMode::Streamed)
    fail("--expert-host-share splits the misses of a streamed cache: add --expert-residency streamed");
  r.cache_bytes = static_cast<uint64_t>(o.cache_mb) << 20;
  r.cache_slots = static_cast<int32_t>(o.cache_slots);
  r.memory_budget = static_cast<uint64_t>(o.memory_budget_mb) << 20;
  r.policy = o.policy == "lru" ? EvictionPolicy::LRU : EvictionPolicy::LFU;
  r.prefetch = o.prefetch == "on" ? PrefetchMode::On : o.prefetch == "off" ? PrefetchMode::Off : PrefetchMode::Auto;
  r.host_share = o.host_share;
  r.host_threads = resolve_threads(o.threads);
  r.read.direct_io = o.direct_io;
  if (o.reader_threads) r.read.threads = o.reader_threads;
  if (o.read_chunk_kb) {
    if (o.read_chunk_kb % 4) fail("--expert-read-chunk-kb must be a multiple of 4 (O_DIRECT reads whole pages)");
    r.read.chunk_bytes = static_cast<uint64_t>(o.read_chunk_kb) << 10;
  }
  l.run.n_ctx = o.ctx;
  l.run.batch = resolve_batch(o, be);
  l.run.logit_rows = logit_rows;
  return l;
}

}  // namespace ts::cli
