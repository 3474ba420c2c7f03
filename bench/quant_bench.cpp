// Single-threaded matvec/matmul throughput per weight format and kernel table ("x16": int16
// activations, the default path; "x8": the same rows with 8-bit codes, --precision int8; no suffix:
// float weights with f32 activations). Decode is memory
// bound, so matvec reports weight bytes streamed per second; the weight set (about 4x the 105 MiB
// L3 of the development machine) is cycled through so every call reads from DRAM. Matmul (prefill)
// reports the same bytes per call but does n_tok tokens of work on them. Dequant and DecodedMatvec
// time the backend's exact-activation path (see run_decoded) on the same weights.
//   quant_bench --benchmark_filter='Matvecx16/Q4_0'
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <string>
#include <tuple>
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

// The activations a kernel multiplies: f32 (float weights), or int16 rows with int16 or 8-bit codes.
enum class Acts { f32, int16, int16_codes8 };

const Setup& setup(GgmlType t, int64_t n_tok, Acts acts) {
  static std::map<std::tuple<GgmlType, int64_t, Acts>, Setup> cache;
  auto [it, fresh] = cache.try_emplace({t, n_tok, acts});
  const bool act16 = acts != Acts::f32;
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
  s.xq_stride = act16 ? act16_bytes(kK) : kK * sizeof(float);
  s.xq.resize(s.xq_stride * n_tok);
  for (int64_t i = 0; i < n_tok; ++i) {
    for (float& v : row) v = g(rng);
    if (act16)
      quantize_act16(row.data(), s.xq.data() + i * s.xq_stride, kK, acts == Acts::int16 ? ActCodes::int16 : ActCodes::int8);
    else std::memcpy(s.xq.data() + i * s.xq_stride, row.data(), kK * sizeof(float));
  }
  return s;
}

void run(benchmark::State& state, GgmlType t, Isa isa, int64_t n_tok, Acts acts) {
  if (!isa_supported(isa)) return state.SkipWithError("ISA not supported here");
  const KernelTable& kt = kernels_for(isa);
  const MatmulFn f = acts == Acts::f32 ? kt.matmul[type_index(t)]
                     : acts == Acts::int16 ? kt.matmul16[type_index(t)]
                                           : kt.matmul8[type_index(t)];
  if (!f) return state.SkipWithError("no kernel");
  const Setup& s = setup(t, n_tok, acts);
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

void decode_row(const KernelTable& kt, GgmlType t, const uint8_t* src, float* dst, int64_t n) {
  if (const DequantFn f = kt.dequant[type_index(t)]) f(src, dst, n);
  else dequantize_ref(t, src, dst, n);
}

// The backend's exact-activation path: per task, decode kDecodedRows weight rows into an f32
// buffer that stays in L2, then multiply it with the f32 activations. With `multiply` off it times
// the decoding alone. Bytes are quantized weight bytes; "Gelem/s" counts decoded values.
constexpr int64_t kDecodedRows = 16;

void run_decoded(benchmark::State& state, GgmlType t, Isa isa, bool multiply) {
  if (!isa_supported(isa)) return state.SkipWithError("ISA not supported here");
  const KernelTable& kt = kernels_for(isa);
  const MatmulFn f32 = kt.matmul[type_index(GgmlType::F32)];
  const Setup& s = setup(t, 1, Acts::int16);
  std::vector<float> x(kK), Y(kRows), rows(static_cast<size_t>(kDecodedRows * kK));
  std::mt19937 rng(2);
  std::normal_distribution<float> g;
  for (float& v : x) v = g(rng);
  const size_t copies = s.weights.size() / s.matrix_bytes;
  size_t c = 0;
  for (auto _ : state) {
    const uint8_t* W = s.weights.data() + c * s.matrix_bytes;
    for (int64_t r0 = 0; r0 < kRows; r0 += kDecodedRows) {
      for (int64_t r = 0; r < kDecodedRows; ++r) decode_row(kt, t, W + (r0 + r) * s.row_stride, rows.data() + r * kK, kK);
      if (multiply)
        f32(reinterpret_cast<const uint8_t*>(rows.data()), kK * sizeof(float), kDecodedRows, kK,
            reinterpret_cast<const uint8_t*>(x.data()), 0, 1, Y.data() + r0, 0);
    }
    benchmark::DoNotOptimize(Y.data());
    benchmark::DoNotOptimize(rows.data());
    c = (c + 1) % copies;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.matrix_bytes));
  state.counters["Gelem/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kRows * kK * 1e-9, benchmark::Counter::kIsRate);
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

const bool registered = [] {
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_K,
                     GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::F16, GgmlType::BF16})
    for (Isa isa : kAllIsas) {
      const std::string suffix = std::string(type_name(t)) + "/" + isa_name(isa);
      const bool float_weights = t == GgmlType::F16 || t == GgmlType::BF16;
      for (Acts acts : {Acts::f32, Acts::int16, Acts::int16_codes8})
        for (int64_t n_tok : {1, 4, 8, 64}) {
          if ((acts == Acts::f32) != float_weights) continue;
          if (acts == Acts::int16_codes8 && n_tok < 8) continue;  // the 8-bit kernels are prefill panels
          const char* kind = acts == Acts::f32 ? "/" : acts == Acts::int16 ? "x16/" : "x8/";
          const std::string name = (n_tok == 1 ? "Matvec" : "Matmul" + std::to_string(n_tok)) + kind + suffix;
          benchmark::RegisterBenchmark(name.c_str(), run, t, isa, n_tok, acts)->Unit(benchmark::kMicrosecond)->MinTime(0.3);
        }
      for (bool multiply : {false, true}) {
        const std::string name = (multiply ? "DecodedMatvec/" : "Dequant/") + suffix;
        benchmark::RegisterBenchmark(name.c_str(), run_decoded, t, isa, multiply)
            ->Unit(benchmark::kMicrosecond)
            ->MinTime(0.3);
      }
    }
  return true;
}();

}  // namespace
}  // namespace ts::quant

BENCHMARK_MAIN();
