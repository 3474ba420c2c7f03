// Single-threaded matvec/matmul throughput per weight format and kernel table. Decode is memory
// bound, so matvec reports weight bytes streamed per second; the weight set (about 4x the 105 MiB
// L3 of the development machine) is cycled through so every call reads from DRAM. Matmul (prefill)
// reports the same bytes per call but does n_tok tokens of work on them.
//   quant_bench --benchmark_filter='Matvec/Q4_0'
#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <vector>

#include "quant/kernel_table.h"
#include "quant/kernels.h"

namespace ts::quant {
namespace {

constexpr int64_t kRows = 4096, kK = 4096;
constexpr size_t kWeightSetBytes = size_t{400} << 20;

struct Setup {
  std::vector<uint8_t> weights;  // several kRows x kK matrices back to back
  size_t matrix_bytes, row_stride;
  std::vector<uint8_t> xq;
  size_t xq_stride;
};

const Setup& setup(GgmlType t, int64_t n_tok) {
  static std::map<std::pair<GgmlType, int64_t>, Setup> cache;
  auto [it, fresh] = cache.try_emplace({t, n_tok});
  Setup& s = it->second;
  if (!fresh) return s;
  std::mt19937 rng(1);
  std::normal_distribution<float> g;
  std::vector<float> row(kK);
  s.row_stride = row_bytes(t, kK);
  s.matrix_bytes = s.row_stride * kRows;
  const size_t copies = std::max<size_t>(1, kWeightSetBytes / s.matrix_bytes);
  s.weights.resize(copies * s.matrix_bytes);
  for (int64_t r = 0; r < kRows; ++r) {
    for (float& v : row) v = g(rng);
    quantize_weights(t, row.data(), s.weights.data() + r * s.row_stride, kK);
  }
  for (size_t c = 1; c < copies; ++c)
    std::copy_n(s.weights.begin(), s.matrix_bytes, s.weights.begin() + static_cast<long>(c * s.matrix_bytes));
  s.xq_stride = activation_bytes(t, kK);
  s.xq.resize(s.xq_stride * n_tok);
  for (int64_t i = 0; i < n_tok; ++i) {
    for (float& v : row) v = g(rng);
    quantize_activation(t, row.data(), s.xq.data() + i * s.xq_stride, kK);
  }
  return s;
}

void run(benchmark::State& state, GgmlType t, Isa isa, int64_t n_tok) {
  if (!isa_supported(isa)) return state.SkipWithError("ISA not supported here");
  const MatmulFn f = kernels_for(isa).matmul[type_index(t)];
  const Setup& s = setup(t, n_tok);
  std::vector<float> Y(static_cast<size_t>(kRows * n_tok));
  const size_t copies = s.weights.size() / s.matrix_bytes;
  size_t c = 0;
  for (auto _ : state) {
    f(s.weights.data() + c * s.matrix_bytes, s.row_stride, kRows, kK, s.xq.data(), s.xq_stride, n_tok, Y.data(), kRows);
    benchmark::DoNotOptimize(Y.data());
    c = (c + 1) % copies;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.matrix_bytes));
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations() * n_tok), benchmark::Counter::kIsRate);
}

const bool registered = [] {
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_K,
                     GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::F16, GgmlType::BF16})
    for (Isa isa : kAllIsas)
      for (int64_t n_tok : {1, 64}) {
        const std::string name = std::string(n_tok == 1 ? "Matvec/" : "Matmul64/") + std::string(type_name(t)) + "/" +
                                 isa_name(isa);
        benchmark::RegisterBenchmark(name.c_str(), run, t, isa, n_tok)->Unit(benchmark::kMicrosecond)->MinTime(0.3);
      }
  return true;
}();

}  // namespace
}  // namespace ts::quant

BENCHMARK_MAIN();
