// The CPU backend: activations in host memory, weights used in place from the memory map, every
// operation split across a fixed thread pool by output rows (or by (sequence, kv head, rows, key
// chunk) for attention), so each output element is computed by exactly one thread in a fixed order:
// the bytes do not depend on the thread count.
//
// Precision::Exact runs the reference operations (f32 weights decoded from the formats, sums of
// norms and softmax in double): the original engine's bytes. The other precisions run the fast
// operations (vectorised, flash-style attention; cpu_attention.cpp) on CPUs with AVX2.
#pragma once
#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/rope_table.h"
#include "quant/kernels.h"
#include "util/thread_pool.h"

namespace ts {

// Decoding (steps of at most kDecodeTokens rows: one sequence, or a server's batch of them) waits
// on memory, and each task of a product starts cold: its kernel fetches each 8 rows' successors
// while it computes, but not past the task. So a decode product takes one long task per thread, a
// whole number of 32-row blocks (the int16 activation block the FFN's down input is quantized in).
// Measured against 32 rows per task (5 interleaved rounds, 2 threads, tg64): SmolLM2 285-314 ->
// 360-419 tok/s, gpt-oss mini 271-292 -> 342-365; 128 and 256 rows per task were in between, two
// tasks per thread no better. Batched steps of 16 rows (a server's 16 streams) gain 3-7% from it
// too, where 4 was the limit before.
inline constexpr int64_t kDecodeTokens = 16;
inline int64_t decode_task_rows(int64_t rows, int threads) {
  constexpr int64_t tasks_per_thread = 1;
  const int64_t tasks = tasks_per_thread * threads;
  return std::max<int64_t>(32, (rows + 32 * tasks - 1) / (32 * tasks) * 32);
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(int n_threads, Precision precision, KvType kv_type);
  const char* name() const override { return "cpu"; }
  // Beyond a few hundred rows the CPU's prefill is no faster, and its buffers grow with the rows.
  int64_t prefill_batch() const override { return 256; }
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
  // Every queue is the calling thread: copies happen at once and events are always complete.
  void copy_async(void* dst, const void* src, size_t bytes, Queue q) override;
  EventHandle create_event() override { return 0; }
  void destroy_event(EventHandle) override {}
  void record_event(EventHandle, Queue) override {}
  void wait_event(Queue, EventHandle) override {}
  void host_wait(EventHandle) override {}
  void synchronize() override {}

  void begin_step(const Step& s) override;
  void embed(const Mat& table, Act out) override;
  void rms_norm(Act x, const float* w, float eps, int64_t group, Act out) override;
  void matmul(const Mat& w, Act x, Act y) override;
  void matmul_shared(Act x, std::span<const MatmulOut> outs, const InputNorm& norm = {}) override;
  void ffn(Act x, const FfnWeights& w, Act out, const InputNorm& norm = {}) override;
  bool ffn_many(std::span<const FfnJob> jobs) override;
  void add_bias(Act y, const float* b) override;
  void add(Act dst, Act src) override;
  void scale(Act x, float s) override;
  void attention(int64_t layer, Act q, Act k, Act v, const AttentionParams& p, Act out) override;
  void glu(Activation a, Act gate, Act up, Act out) override;
  void gather_rows(Act src, const int32_t* rows, int64_t n, Act dst) override;
  void scatter_rows(Act src, const int32_t* rows, int64_t n, Act dst) override;
  void combine_ranked(Act slots, const float* weights, int64_t k, Act out) override;
  void steer(Act x, const SteerParams& p) override;
  void select_output_rows(Act x, int64_t first, Act out) override;
  void to_host(Act a, float* dst) override;

 private:
  // Rotates each row's heads by the row's position in the step (attention's first stage).
  void rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p);
  // y = x W^T for each output, their bias and accumulate flags aside (matmul_shared applies them);
  // `codes`: the activation codes of quantized weights (the FFNs pass ffn_codes_).
  void products(Act x, std::span<const MatmulOut> outs, const InputNorm& norm,
                quant::ActCodes codes = quant::ActCodes::int16);
  // Quantizes the rows of x into int16 rows with `codes`, normalised first if asked, into dst;
  // returns the row stride.
  size_t quantize_rows(Act x, const InputNorm& norm, quant::ActCodes codes, std::vector<uint8_t>& dst);
  bool fused_ffn(const FfnWeights& w) const;  // ffn's two-pass quantized path applies
  // The rows of x normalised into norm_rows_ (the reference rms_norm), for the paths that need f32.
  Act normalised(Act x, const InputNorm& norm);
  Act scratch(std::vector<float>& buf, int64_t n, int64_t dim);
  void attention_reference(int64_t layer, Act q, const AttentionParams& p, Act out);
  void attention_fast(int64_t layer, Act q, const AttentionParams& p, Act out);
  // Runs fn(row) for rows [0, n) of `dim` values: on the pool when there is enough work.
  template <class Fn>
  void for_rows(int64_t n, int64_t dim, Fn&& fn);
  size_t kv_elem_bytes() const { return kv_type_ == KvType::F16 ? 2 : 4; }

  ThreadPool pool_;
  Precision precision_;
  quant::ActCodes ffn_codes_;  // the FFNs' activation codes (8-bit with Precision::Int8; int16 elsewhere)
  KvType kv_type_;
  bool fast_;  // the fast operations (any precision but Exact, on a CPU with AVX2)
  std::deque<std::vector<float>> vectors_;   // uploaded f32 vectors (stable addresses)
  // One sequence's cache: K and V of every layer, elements of kv_type_, each KV head's positions
  // together: [width / head_dim][positions][head_dim], positions = n_ctx rounded up to whole
  // attention blocks. Decode reads one head's keys at a time: rows of all heads side by side gave it
  // a line or two out of every row, and decode at depth 4096 read them at a quarter of the rate of a
  // contiguous run (one thread, Zen 4: 7.7 against 33.6 GB/s, the SmolLM2 cache's shape).
  struct KvSeq {
    int64_t n_ctx = 0, width = 0, positions = 0;
    std::vector<std::unique_ptr<uint8_t[]>> k, v;  // per layer
  };
  std::map<KvHandle, KvSeq> kv_;
  KvHandle next_kv_ = 0;
  // The current step, and for each of its rows the sequence it belongs to and its position.
  std::vector<int32_t> ids_, out_rows_;
  std::vector<SeqRows> seqs_;
  std::vector<int64_t> row_pos_, row_seq_;
  std::vector<RopeTable> rope_;  // tables computed for this step, one per distinct RopeParams
  std::vector<uint8_t> xq_;                   // quantized activations for matmul (cpu_matmul.cpp)
  std::vector<int64_t> task_end_;             // matmul_shared: cumulative task counts per output
  std::vector<int64_t> task_rows_;            // matmul_shared: rows per task of each output
  // ffn: quantized down-projection input; f32 scratch (normalised input, gate, up, activation).
  std::vector<uint8_t> xq_down_;
  // ffn_many: each FFN's quantized input (and its row stride) and down input.
  std::vector<std::vector<uint8_t>> many_xq_, many_down_;
  std::vector<size_t> many_xs_;
  std::vector<float> norm_rows_, gate_rows_, up_rows_, act_rows_;
  // attention_fast: per (row, chunk, head) partial states, rows' offsets into them, the tasks.
  struct AttnTask {
    int64_t seq, row0, n, kv_head, chunk;
  };
  std::vector<float> attn_parts_;
  std::vector<int64_t> attn_offsets_;
  std::vector<AttnTask> attn_tasks_;
  // matmul_shared: outputs redirected to acc_ where they accumulate, then biases and adds.
  std::vector<MatmulOut> shared_outs_;
  std::vector<float> acc_;
};

}  // namespace ts
