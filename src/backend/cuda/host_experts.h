// Routed experts computed by host threads in the device's place, bit for bit: when a streamed
// expert cache misses, the expert's packed bytes are already in pinned host memory, and the host's
// cores can multiply them while the link copies the layer's other misses. The output must not
// depend on where an expert was computed, so this replays the device's one-token products exactly
// (matvec.cu's mv_kernel with GateUpJob and DownJob, quant_dot.cuh's MXFP4 dot):
//  - the input quantized as stage_q does: per 32 values d = amax / 32639, q = rint(x / d);
//  - per 32-value unit u of a row, the exact integer sum S_u of the doubled MXFP4 values times q;
//  - lane l of the row's warp accumulates fma(S_u, d_w(u) * d_x(u), acc) over u = l, l + 32, ...;
//  - the 32 lanes summed by the xor butterfly of warp_sum (16, 8, 4, 2, 1), then the bias added;
//  - the gated activation by glu.h (IEEE-only e^x), and the down product the same way.
// MXFP4 experts with SwiGLU or gpt-oss's clamped SwiGLU only (supports()).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace ts::gpu {

// One input row quantized as stage_q does (the order of its bytes aside), in the forms the host's
// products read: q per value in natural order (scalar, AVX2), and for VNNI q = 256 h + l split into
// signed bytes, two units side by side per 64 bytes ([u values 0..15][u + 1 values 0..15][u values
// 16..31][u + 1 values 16..31], u even), with 12 times each unit's sum of q. Zero past the row.
struct QRow {
  const int16_t* q;
  const int8_t* h;
  const int8_t* l;
  const int32_t* q12;
  const float* d;  // per 32 values
};

class HostExperts {
 public:
  // The instruction sets of the integer products (every path gives the same bits).
  enum class Path { Scalar, Avx2, Vnni };
  static Path best_path();
  explicit HostExperts(int threads, Path path = best_path());

  // Whether an expert with these weights (in the backend's packed layout) can be computed here.
  static bool supports(const ExpertWeights& w, Activation act);

  struct Job {
    const ExpertWeights* w;  // packed, in host memory
    const float* x;          // [w->gate.cols]
    float* out;              // [w->down.rows]: what the device writes to the pair's slot
  };
  // Every job's FFN; jobs of one call share the shape of jobs[0].
  void run(std::span<const Job> jobs, Activation act);

 private:
  // The jobs' input rows quantized for the products (QRow), each row followed by kPad zero values
  // (the VNNI products read one unit past a row; their per-unit arrays, 8 units).
  struct Quantized {
    static constexpr int64_t kPad = 256;
    int64_t stride = 0;
    std::vector<int16_t> q;
    std::vector<int8_t> h, l;
    std::vector<int32_t> q12;
    std::vector<float> d;
    void resize(int64_t n, int64_t cols);
    void set(int64_t j, const float* x, int64_t cols);
    QRow row(int64_t j) const;
  };
  void rows(const Job& job, int64_t j, bool down, int64_t r0, int64_t r1, Activation act);

  ThreadPool pool_;
  Path path_;
  Quantized x_q_, act_q_;   // per job: the input and the gated activation, quantized
  std::vector<float> act_;  // per job: the gated activation
};

}  // namespace ts::gpu
