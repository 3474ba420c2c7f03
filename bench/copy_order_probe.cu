// Probe (built on request, not by the suite): does a small transfer on the compute stream wait behind
// large host->device copies queued on another stream, as a streamed expert cache's prefetches are
// (docs/CUDA.md, "Not done yet")? On stream C, each behind four 13.3 MB pinned copies (a 20b expert
// each) on stream T: a 46 KB host->device copy (a wave's expert table, the host's expert rows), a
// kernel reading the same pinned bytes through their host address (unified addressing), and a
// 46 KB device->host readback (a layer's routing). Prints, per case, when C's work completed and when T's did (medians of 18).
// Run: copy_order_probe. Results: docs/CUDA_LOG.md, "Streamed decode, modelled from a recorded routing".
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                           \
  do {                                                                     \
    const cudaError_t e = (x);                                             \
    if (e != cudaSuccess) {                                                \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));         \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

__global__ void read_pinned(const float* h, float* d, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] = h[i];
}

namespace {
using Clock = std::chrono::steady_clock;
double us_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main() {
  constexpr size_t kBig = 13300000, kBigCopies = 4, kSmall = 4 * 2880 * sizeof(float);
  int engines = 0;
  CHECK(cudaDeviceGetAttribute(&engines, cudaDevAttrAsyncEngineCount, 0));
  std::printf("async copy engines: %d\n", engines);
  uint8_t *host_big = nullptr, *dev_big = nullptr;
  float *host_small = nullptr, *dev_small = nullptr;
  CHECK(cudaHostAlloc(&host_big, kBig * kBigCopies, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev_big, kBig * kBigCopies));
  CHECK(cudaHostAlloc(&host_small, kSmall, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev_small, kSmall));
  cudaStream_t T, C;
  CHECK(cudaStreamCreateWithFlags(&T, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&C, cudaStreamNonBlocking));
  cudaEvent_t t_done, c_done;
  CHECK(cudaEventCreateWithFlags(&t_done, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&c_done, cudaEventDisableTiming));
  const char* cases[] = {"46 KB H2D on C, T idle", "46 KB H2D on C behind T's copies", "pinned read on C behind T's copies",
                         "46 KB D2H on C behind T's copies"};
  for (int c = 0; c < 4; ++c) {
    std::vector<double> c_us, t_us;
    for (int rep = 0; rep < 20; ++rep) {
      CHECK(cudaDeviceSynchronize());
      const Clock::time_point t0 = Clock::now();
      if (c > 0)
        for (size_t i = 0; i < kBigCopies; ++i)
          CHECK(cudaMemcpyAsync(dev_big + i * kBig, host_big + i * kBig, kBig, cudaMemcpyHostToDevice, T));
      CHECK(cudaEventRecord(t_done, T));
      if (c <= 1) CHECK(cudaMemcpyAsync(dev_small, host_small, kSmall, cudaMemcpyHostToDevice, C));
      if (c == 2) read_pinned<<<static_cast<unsigned>(kSmall / sizeof(float) / 256), 256, 0, C>>>(host_small, dev_small, static_cast<int>(kSmall / sizeof(float)));
      if (c == 3) CHECK(cudaMemcpyAsync(host_small, dev_small, kSmall, cudaMemcpyDeviceToHost, C));
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(c_done, C));
      CHECK(cudaEventSynchronize(c_done));
      const Clock::time_point t1 = Clock::now();
      CHECK(cudaEventSynchronize(t_done));
      const Clock::time_point t2 = Clock::now();
      if (rep >= 2) {
        c_us.push_back(us_between(t0, t1));
        t_us.push_back(us_between(t0, t2));
      }
    }
    std::printf("%-36s C done after %8.1f us, T done after %8.1f us\n", cases[c], median(c_us), median(t_us));
  }
  return 0;
}
