// The CPU backend: activations in host memory, weights used in place from the memory map, every
// operation split across a fixed thread pool by output rows (or by (token, head) for attention), so
// each output element is computed by exactly one thread in a fixed order: the bytes do not depend
// on the thread count.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/rope_table.h"
#include "util/thread_pool.h"

namespace ts {

class CpuBackend final : public Backend {
 public:
  CpuBackend(int n_threads, bool quantize_activations);
  const char* name() const override { return "cpu"; }
  int threads() const override { return pool_.size(); }

  Act alloc(int64_t n, int64_t dim) override;
  void release(Act& a) override;
  KvHandle alloc_kv(int64_t n_layer, int64_t n_ctx, int64_t width) override;
  void free_kv(KvHandle kv) override;
  size_t kv_bytes() const override;
  Buffer alloc_buffer(size_t bytes, MemKind kind) override;
  void free_buffer(Buffer& b) override;
  Mat upload(const Mat& host) override { return host; }
  const float* upload_f32(const std::vector<float>& v) override;

  void begin_step(const Step& s) override;
  void embed(const Mat& table, Act out) override;
  void rms_norm(Act x, const float* w, float eps, int64_t group, Act out) override;
  void matmul(const Mat& w, Act x, Act y) override;
  void add_bias(Act y, const float* b) override;
  void add(Act dst, Act src) override;
  void scale(Act x, float s) override;
  void rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p) override;
  void attention(int64_t layer, Act q, Act k, Act v, const AttentionParams& p, Act out) override;
  void glu(Activation a, Act gate, Act up, Act out) override;
  void gather_rows(Act src, const int32_t* rows, int64_t n, Act dst) override;
  void scatter_rows(Act src, const int32_t* rows, int64_t n, Act dst) override;
  void combine_ranked(Act slots, const float* weights, int64_t k, Act out) override;
  void steer(Act x, const SteerParams& p) override;
  void select_output_rows(Act x, int64_t first, Act out) override;
  void to_host(Act a, float* dst) override;

 private:
  ThreadPool pool_;
  bool quantize_activations_;
  std::deque<std::vector<float>> vectors_;   // uploaded f32 vectors (stable addresses)
  // One sequence's cache: K and V of every layer, [n_ctx][width] f32 each.
  struct KvSeq {
    int64_t n_ctx = 0, width = 0;
    std::vector<std::unique_ptr<float[]>> k, v;  // per layer
  };
  std::map<KvHandle, KvSeq> kv_;
  KvHandle next_kv_ = 0;
  // The current step, and for each of its rows the sequence it belongs to and its position.
  std::vector<int32_t> ids_, out_rows_;
  std::vector<SeqRows> seqs_;
  std::vector<int64_t> row_pos_, row_seq_;
  std::vector<RopeTable> rope_;  // tables computed for this step, one per distinct RopeParams
  std::vector<uint8_t> xq_;                   // quantized activations for matmul
};

}  // namespace ts
