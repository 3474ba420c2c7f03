// Single-threaded throughput of the CPU attention kernel (backend/cpu/attention.h) on a causal
// prefill: `n` query rows at positions 0..n-1 over an f16 cache of the same rows, in the backend's
// tasks of 8 rows, for one KV head and its `group` q heads. Reports (row, head, key) triples per
// second; the cache (n x head_dim halves for K and for V) stays in L2, so this is the kernel's
// compute rate, not memory's.
//   attention_bench --benchmark_filter='Prefill/64/3'
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backend/cpu/attention.h"

namespace ts::cpu {
namespace {

constexpr int64_t kRowsPerTask = 8;  // as the backend's tasks (cpu_attention.cpp)

void Prefill(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) {
    state.SkipWithError("the attention kernel needs AVX2, FMA and F16C");
    return;
  }
  const int64_t hd = state.range(0), group = state.range(1), n = state.range(2);
  std::mt19937 rng(1);
  std::normal_distribution<float> g;
  std::vector<float> k(n * hd), v(n * hd), q(n * group * hd);
  for (float* a : {k.data(), v.data(), q.data()})
    for (float* e = a; e < a + (a == q.data() ? q.size() : k.size()); ++e) *e = g(rng);
  std::vector<uint16_t> kh(k.size()), vh(v.size());
  store_f16_avx2(k.data(), kh.data(), static_cast<int64_t>(k.size()));
  store_f16_avx2(v.data(), vh.data(), static_cast<int64_t>(v.size()));
  AttnLayer L;
  L.k = kh.data();
  L.v = vh.data();
  L.key_stride = hd;
  L.head_stride = n * hd;
  L.f16 = true;
  L.head_dim = hd;
  L.group = group;
  L.scale = 1.0f / 8.0f;
  const int64_t sf = attn_state_floats(hd);
  std::vector<float> states(static_cast<size_t>(n * group * sf));
  for (auto _ : state) {
    for (int64_t r0 = 0; r0 < n; r0 += kRowsPerTask) {
      AttnRow rows[kRowsPerTask];
      const int64_t m = std::min(kRowsPerTask, n - r0);
      for (int64_t r = 0; r < m; ++r) rows[r] = AttnRow{q.data() + (r0 + r) * group * hd, r0 + r, states.data() + (r0 + r) * group * sf};
      attend_chunk_avx2(L, rows, m, 0, 0);
    }
    benchmark::DoNotOptimize(states.data());
    benchmark::ClobberMemory();
  }
  const double triples = static_cast<double>(group) * static_cast<double>(n) * static_cast<double>(n + 1) / 2.0;
  state.counters["triples/s"] = benchmark::Counter(triples * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
// head_dim, q heads per KV head, rows: SmolLM2 (64, 3), gpt-oss (64, 8), Qwen3-MoE (128, 8), within
// one key chunk (kAttnChunk).
BENCHMARK(Prefill)->Args({64, 3, 512})->Args({64, 8, 512})->Args({128, 8, 512});

}  // namespace
}  // namespace ts::cpu

BENCHMARK_MAIN();
