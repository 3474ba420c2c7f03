// The CPU backend: activations in host memory, weights used in place from the memory map, every
// operation split across a fixed thread pool by output rows (or by (token, head) for attention), so
// each output element is computed by exactly one thread in a fixed order: the bytes do not depend
// on the thread count.
#pragma once
#include <deque>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace ts {

class CpuBackend final : public Backend {
 public:
  CpuBackend(int n_threads, Precision precision);
  const char* name() const override { return "cpu"; }
  int threads() const override { return pool_.size(); }

  Act alloc(int64_t n, int64_t dim) override;
  void release(Act& a) override;
  KvLayer alloc_kv(int64_t n_ctx, int64_t width) override;
  Buffer alloc_buffer(size_t bytes, MemKind kind) override;
  void free_buffer(Buffer& b) override;
  Mat upload(const Mat& host) override { return host; }
  const float* upload_f32(const std::vector<float>& v) override;

  void embed(const Mat& table, const int32_t* ids, int64_t n, Act out) override;
  void rms_norm(Act x, const float* w, float eps, int64_t group, Act out) override;
  void matmul(const Mat& w, Act x, Act y) override;
  void matmul_shared(Act x, std::span<const MatmulOut> outs) override;
  void add_bias(Act y, const float* b) override;
  void add(Act dst, Act src) override;
  void scale(Act x, float s) override;
  void rope(Act x, int64_t n_head, int64_t head_dim, const RopeTable& t) override;
  void attention(const KvLayer& kv, Act q, Act k, Act v, int64_t pos0, const AttentionParams& p, Act out) override;
  void glu(Activation a, Act gate, Act up, Act out) override;
  void gather_rows(Act src, const int32_t* rows, int64_t n, Act dst) override;
  void scatter_rows(Act src, const int32_t* rows, int64_t n, Act dst) override;
  void combine_ranked(Act slots, const float* weights, int64_t k, Act out) override;
  void to_host(Act a, float* dst) override;

 private:
  ThreadPool pool_;
  Precision precision_;
  std::deque<std::vector<float>> vectors_;   // uploaded f32 vectors (stable addresses)
  std::vector<std::unique_ptr<float[]>> kv_;  // KV cache memory
  std::vector<uint8_t> xq_;                   // quantized activations for matmul (cpu_matmul.cpp)
  std::vector<int64_t> task_end_;             // matmul_shared: cumulative task counts per output
};

}  // namespace ts
