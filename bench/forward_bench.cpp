// Forward-pass throughput on one backend, llama-bench style: ppN processes an N-token prompt from an
// empty cache in batches of --batch; tgN decodes N tokens one at a time after a cache already
// filled to --depth. Each test is repeated; the table gives the median and the spread.
//   forward_bench -m model.gguf --device cuda -p 512,2048 -n 128 -d 0,8192 -r 3 --batch 2048
// Token ids are drawn at random (fixed seed): synthetic models need no vocabulary.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  std::string test;
  std::vector<double> tok_s;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Runs n tokens through the cache from its current position, at most `batch` per call.
void feed(ts::Forward& fwd, ts::KvCache& kv, const std::vector<int32_t>& ids, int64_t batch, std::vector<float>& logits) {
  for (size_t i = 0; i < ids.size(); i += batch) {
    const int64_t m = std::min<int64_t>(batch, static_cast<int64_t>(ids.size() - i));
    fwd.run(kv, ids.data() + i, m, false, logits.data());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"forward-pass throughput (pp: prompt processing, tg: decode), llama-bench style"};
  std::string model, device = "auto";
  std::vector<int64_t> pp{512}, depths{0};
  int64_t tg = 128, batch = 2048, ctx = 0;
  int reps = 3, threads = 0;
  app.add_option("-m,--model", model, "GGUF model")->required();
  app.add_option("--device", device, "cpu, cuda or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("-p,--n-prompt", pp, "prompt lengths for pp tests (0: none)")->delimiter(',');
  app.add_option("-n,--n-gen", tg, "tokens for the tg tests (0: none)");
  app.add_option("-d,--depth", depths, "cache depths for the tg tests")->delimiter(',');
  app.add_option("-r,--repetitions", reps, "repetitions of each test after a warm-up")->check(CLI::Range(1, 100));
  app.add_option("--batch", batch, "tokens per forward call in pp")->check(CLI::Range(int64_t{1}, int64_t{8192}));
  app.add_option("-t,--threads", threads, "CPU threads (default: all cores)");
  app.add_option("--ctx", ctx, "cache size (default: what the tests need)");
  CLI11_PARSE(app, argc, argv);
  try {
    auto be = ts::make_backend(device, threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    const auto t_load = Clock::now();
    auto m = ts::Model::load(model, *be);
    std::fprintf(stderr, "loaded %s on %s in %.1f s\n", model.c_str(), be->name(), seconds_since(t_load));
    const int64_t V = m->hp().n_vocab;
    int64_t need = tg;
    for (int64_t p : pp) need = std::max(need, p);
    for (int64_t d : depths) need = std::max(need, d + tg + 1);
    ts::KvCache kv(*be, m->hp(), ctx > 0 ? ctx : need + 1);
    ts::ForwardOptions fo;
    fo.max_batch = batch;
    ts::Forward fwd(*m, *be, fo);
    std::mt19937 rng(42);
    std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(V - 1));
    auto ids = [&](int64_t n) {
      std::vector<int32_t> v(n);
      for (int32_t& x : v) x = tok(rng);
      return v;
    };
    std::vector<float> logits(V);
    std::vector<Result> results;
    for (int64_t p : pp) {
      if (p <= 0) continue;
      Result r{"pp" + std::to_string(p), {}};
      for (int rep = 0; rep <= reps; ++rep) {  // rep 0 warms up
        const std::vector<int32_t> prompt = ids(p);
        kv.n_past = 0;
        const auto t0 = Clock::now();
        feed(fwd, kv, prompt, batch, logits);
        const double s = seconds_since(t0);
        if (rep > 0) r.tok_s.push_back(p / s);
      }
      results.push_back(r);
    }
    for (int64_t d : depths) {
      if (tg <= 0) break;
      Result r{"tg" + std::to_string(tg) + (d > 0 ? " @ d" + std::to_string(d) : ""), {}};
      for (int rep = 0; rep <= reps; ++rep) {
        kv.n_past = 0;
        feed(fwd, kv, ids(d + 1), batch, logits);  // the depth, and one token so decode shapes are warm
        const std::vector<int32_t> gen = ids(tg);
        const auto t0 = Clock::now();
        for (int64_t i = 0; i < tg; ++i) fwd.run(kv, &gen[i], 1, false, logits.data());
        const double s = seconds_since(t0);
        if (rep > 0) r.tok_s.push_back(tg / s);
      }
      results.push_back(r);
    }
    std::printf("| model | backend | test | t/s (median) | min | max |\n|---|---|---|---:|---:|---:|\n");
    for (Result& r : results) {
      std::sort(r.tok_s.begin(), r.tok_s.end());
      std::printf("| %s | %s | %s | %.2f | %.2f | %.2f |\n", model.substr(model.find_last_of('/') + 1).c_str(), be->name(),
                  r.test.c_str(), r.tok_s[r.tok_s.size() / 2], r.tok_s.front(), r.tok_s.back());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forward_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
