// `turbospark bench`: llama-bench-style throughput (pp and tg, mean ± sd over repetitions after a
// warm-up), with decode's achieved weight bandwidth next to the machine's measured read bandwidth.
// --json prints one object for scripts (bench/compare.sh).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/options.h"
#include "quant/kernels.h"
#include "runtime/bench.h"
#include "util/error.h"

namespace ts::cli {
namespace {

struct BenchOptions {
  ModelOptions model;
  int64_t n_prompt = 512, n_gen = 128, n_depth = 0, sequences = 1;
  int reps = 5;
  bool json = false;
};

void run_bench_command(const BenchOptions& o) {
  const int threads = resolve_threads(o.model.threads);
  auto be = make_backend(o.model);
  const bool cpu = std::string(be->name()) == "cpu";  // the read-bandwidth roofline is the CPU's
  const std::string path = resolve_model(o.model);
  BenchConfig c;
  c.n_prompt = o.n_prompt;
  c.n_gen = o.n_gen;
  c.n_depth = o.n_depth;
  c.reps = o.reps;
  // llama-bench's micro-batch (512), or the backend's prefill batch where that is larger.
  c.batch = o.model.batch ? o.model.batch : std::max<int64_t>(512, be->prefill_batch());
  c.sequences = o.sequences;
  // The residency options apply as in every other command; the run's shape is the bench's own.
  LoadOptions lo = load_options(o.model, *be, o.sequences);
  lo.run.n_ctx = c.n_depth + std::max(c.n_prompt, c.n_gen);
  lo.run.batch = std::min(c.batch, std::max<int64_t>({c.n_prompt, c.n_depth, 1}));
  auto model = Model::load(path, *be, lo);
  const BenchResult r = run_bench(*model, *be, c);
  // The weight bandwidth of decode is that of one sequence's steps (several share their weights).
  const bool one = o.sequences == 1;
  const double read_bw = o.n_gen > 0 && cpu && one ? measure_read_bandwidth(threads) : 0;
  const double tg_bw = one ? r.tg.mean * static_cast<double>(r.decode_bytes) : 0;
  const std::string name = std::filesystem::path(path).filename().string();
  // A cache that moves experts: its hits and the bytes it moved, over the whole run (warm-ups too).
  const bool cached = model->hp().is_moe() && !model->experts().resident();
  const ExpertStats es = cached ? model->experts().stats() : ExpertStats{};
  const double hit_rate = es.requests ? static_cast<double>(es.hits) / static_cast<double>(es.requests) : 0;
  if (o.json) {
    nlohmann::json j;
    j["model"] = path;
    j["arch"] = model->hp().arch;
    j["threads"] = threads;
    j["backend"] = be->name();
    j["isa"] = quant::kernel_isa();
    j["precision"] = o.model.precision;
    j["kv_type"] = kv_type_for(o.model) == KvType::F16 ? "f16" : "f32";
    j["batch"] = c.batch;
    j["n_prompt"] = c.n_prompt;
    j["n_gen"] = c.n_gen;
    j["n_depth"] = c.n_depth;
    j["sequences"] = c.sequences;
    j["residency"] = residency_mode_name(model->residency().mode);
    j["reps"] = c.reps;
    if (c.n_prompt > 0) {
      j["pp"] = r.pp.mean;
      j["pp_sd"] = r.pp.sd;
      j["pp_samples"] = r.pp.samples;
    }
    if (c.n_gen > 0) {
      j["tg"] = r.tg.mean;
      j["tg_sd"] = r.tg.sd;
      j["tg_samples"] = r.tg.samples;
      if (one) {
        j["decode_bytes_per_token"] = r.decode_bytes;
        j["tg_bandwidth_gbs"] = tg_bw * 1e-9;
        j["read_bandwidth_gbs"] = read_bw * 1e-9;
      }
    }
    if (cached) {
      j["expert_requests"] = es.requests;
      j["expert_hit_rate"] = hit_rate;
      j["expert_bytes_moved"] = es.bytes_read;
      j["expert_host_computed"] = es.host_computed;
    }
    j["version"] = "turbospark 0.1.0";
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  if (cpu)
    std::printf("model %s (%s), %d threads, %s kernels, %s activations, %s KV cache, batch %lld\n", name.c_str(),
                model->hp().arch.c_str(), threads, quant::kernel_isa(), o.model.precision.c_str(),
                kv_type_for(o.model) == KvType::F16 ? "f16" : "f32", static_cast<long long>(c.batch));
  else
    std::printf("model %s (%s), %s backend, batch %lld\n", name.c_str(), model->hp().arch.c_str(), be->name(),
                static_cast<long long>(c.batch));
  if (model->hp().is_moe()) std::printf("%s\n", model->residency().summary.c_str());
  std::printf("| %-13s | %20s | %19s |\n", "test", "t/s (mean ± sd)", "min .. max");
  std::printf("| ------------- | -------------------: | ------------------: |\n");
  auto row = [&c](const char* test, int64_t n, int64_t seqs, const Spread& s) {
    const std::string name = seqs > 1 ? fmt::format("{}{}x{}", test, n, seqs) : fmt::format("{}{}", test, n);
    const std::string label = c.n_depth ? fmt::format("{}@d{}", name, c.n_depth) : name;
    std::printf("| %-13s | %11.2f ± %6.2f | %8.2f .. %8.2f |\n", label.c_str(), s.mean, s.sd, s.min, s.max);
  };
  if (c.n_prompt > 0) row("pp", c.n_prompt, 1, r.pp);
  if (c.n_gen > 0) {
    row("tg", c.n_gen, c.sequences, r.tg);
    if (cpu && one)
      std::printf("decode reads %.1f MiB of weights per token: %.2f GB/s, %.0f%% of the %.2f GB/s measured read bandwidth\n",
                  static_cast<double>(r.decode_bytes) / (1 << 20), tg_bw * 1e-9, 100.0 * tg_bw / read_bw, read_bw * 1e-9);
  }
  if (cached)
    std::printf("expert cache over the run (warm-ups included): %.1f%% hits of %lld requests, %.1f%% computed on the host, "
                "%.1f MiB moved per request\n",
                100.0 * hit_rate, static_cast<long long>(es.requests),
                100.0 * static_cast<double>(es.host_computed) / static_cast<double>(std::max<int64_t>(es.requests, 1)),
                static_cast<double>(es.bytes_read) / (1 << 20) / static_cast<double>(std::max<int64_t>(es.requests, 1)));
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand("bench", "measure prompt processing (pp) and generation (tg) speed, llama-bench style");
  add_model_options(sub, o->model, false);
  sub->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens for the pp test (0: skip)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  sub->add_option("-n,--n-gen", o->n_gen, "tokens for the tg test (0: skip)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  sub->add_option("-d,--n-depth", o->n_depth, "tokens already in the KV cache before each test, as llama-bench's -d")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  sub->add_option("-r,--repetitions", o->reps, "repetitions of each test after the warm-up")->check(CLI::Range(1, 1000));
  sub->add_option("--sequences", o->sequences, "sequences the tg test decodes together, one token each per step (tokens/s over all)")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  sub->add_flag("--json", o->json, "print one JSON object instead of the table");
  sub->callback([o] { run_bench_command(*o); });
}

}  // namespace ts::cli
