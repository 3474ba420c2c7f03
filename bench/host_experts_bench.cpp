// The host's share of a streamed CUDA decode (backend/cuda/host_experts.h): one token through one
// MXFP4 expert of the 20b's shape (2880 x 2880, gpt-oss's clamped SwiGLU) per call, 24 experts in
// turn so the weights come from memory, for each thread count given; prints the median time per
// expert and its weight bytes per second beside the machine's read bandwidth on as many threads
// (runtime/bench.h), so a host says whether its share is bound by memory or by the products.
//   host_experts_bench [THREADS...]   (default: 1 and every hardware thread)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "backend/cuda/host_experts.h"
#include "backend/cuda/weight_layout.h"
#include "runtime/bench.h"

namespace {

constexpr int64_t kEmbd = 2880, kFf = 2880;
constexpr int kExperts = 24, kRounds = 5;

struct Expert {
  std::vector<uint8_t> packed[3];
  std::vector<float> bias[3];
  ts::ExpertWeights w;
};

// Random nibbles and scales near 2^0 in the device layout: the products' work does not depend on
// the values.
Expert make_expert(std::mt19937& rng) {
  Expert e;
  const int64_t rows[3] = {kFf, kFf, kEmbd}, cols[3] = {kEmbd, kEmbd, kFf};
  ts::Mat* mats[3] = {&e.w.gate, &e.w.up, &e.w.down};
  const float** biases[3] = {&e.w.gate_bias, &e.w.up_bias, &e.w.down_bias};
  for (int p = 0; p < 3; ++p) {
    const ts::gpu::RowLayout L = ts::gpu::row_layout(ts::GgmlType::MXFP4, cols[p]);
    e.packed[p].resize(static_cast<size_t>(rows[p]) * L.stride);
    for (int64_t r = 0; r < rows[p]; ++r) {
      uint8_t* row = e.packed[p].data() + r * L.stride;
      for (uint32_t i = 0; i < L.lo; ++i) row[i] = static_cast<uint8_t>(rng());
      for (uint32_t i = L.lo; i < L.stride; ++i) row[i] = static_cast<uint8_t>(122 + rng() % 8);
    }
    *mats[p] = ts::Mat{ts::GgmlType::MXFP4, e.packed[p].data(), rows[p], cols[p], L.stride};
    e.bias[p].assign(rows[p], 0.01f);
    *biases[p] = e.bias[p].data();
  }
  e.w.on_host = true;
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::max(1, std::atoi(argv[i])));
  if (threads.empty()) threads = {1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  std::mt19937 rng(1);
  std::vector<Expert> experts;
  for (int i = 0; i < kExperts; ++i) experts.push_back(make_expert(rng));
  uint64_t bytes = 0;
  for (const std::vector<uint8_t>& p : experts[0].packed) bytes += p.size();
  std::vector<float> x(kEmbd), out(kEmbd);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& v : x) v = g(rng);
  std::printf("one expert: %.1f MB; path %d (0 scalar, 1 AVX2, 2 VNNI)\n", bytes / 1e6,
              static_cast<int>(ts::gpu::HostExperts::best_path()));
  for (int t : threads) {
    ts::gpu::HostExperts hx(t);
    std::vector<double> ms;
    for (int i = 0; i < (kRounds + 1) * kExperts; ++i) {
      const ts::gpu::HostExperts::Job job{&experts[i % kExperts].w, x.data(), out.data()};
      const auto t0 = std::chrono::steady_clock::now();
      hx.run({&job, 1}, ts::Activation::ClampedSwiGLU);
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= kExperts) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2], rate = bytes / med / 1e6;
    const double bw = ts::measure_read_bandwidth(t) / 1e9;
    std::printf("%3d threads: %.3f ms per expert (min %.3f), %.1f GB/s of weights; read bandwidth %.1f GB/s (%.0f%%)\n", t, med,
                ms.front(), rate, bw, 100.0 * rate / bw);
  }
  return 0;
}
