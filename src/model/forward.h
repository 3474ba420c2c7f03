// The forward pass, written once for every family against the Backend interface: embeddings, then
// per layer attention and FFN/MoE with the family's contracts, then the final norm and head.
//
// One call runs a batch of sequences: their rows are concatenated for the row-wise operations (every
// weight is read once per call, however many sequences share it), RoPE and attention use each row's
// own position and sequence. Every row is computed the same way whatever else is in the batch, so a
// sequence's logits are the same bytes alone or batched with others.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/residual_capture.h"
#include "moe/moe_layer.h"
#include "steer/steering.h"

namespace ts {

struct ForwardOptions {
  int64_t max_batch = 256;  // rows (tokens of all sequences) per forward call
  ExpertOrder expert_order = ExpertOrder::Router;
  const Steering* steering = nullptr;  // residual edits after each block, or none
};

// One sequence's part of a forward call: n tokens at positions kv.n_past.., which the call appends
// to its cache. Logits are raw (only the sampler normalises): of every token ([n][n_vocab]) when
// all_logits, else of the last token ([n_vocab]); none when `logits` is null. With `capture`, the
// residual after every layer is appended for the last token (every token with capture_all).
struct SeqStep {
  KvCache* kv = nullptr;
  const int32_t* ids = nullptr;
  int64_t n = 0;
  bool all_logits = false;
  float* logits = nullptr;
  ResidualCapture* capture = nullptr;
  bool capture_all = false;
};

class Forward {
 public:
  Forward(const Model& m, Backend& be, const ForwardOptions& opt = {});
  ~Forward();
  Forward(const Forward&) = delete;
  Forward& operator=(const Forward&) = delete;

  // Runs the sequences (distinct caches, at most max_batch tokens in all). Non-finite logits are an
  // error naming the first layer whose output is not finite.
  void run(std::span<const SeqStep> seqs);
  void run(KvCache& kv, const int32_t* ids, int64_t n, bool all_logits, float* logits) {
    const SeqStep s{&kv, ids, n, all_logits, logits};
    run(std::span<const SeqStep>(&s, 1));
  }
  int64_t max_batch() const { return opt_.max_batch; }
  // Routed experts of the last run, per MoE layer (empty for dense models): for instrumentation.
  const Routing& routing(int64_t layer) const { return moe_routing_[layer]; }

 private:
  // The layers over the current step's n rows; with `check`, a non-finite layer output is an error.
  void layers(int64_t n, bool check);
  void attention_block(int64_t l, Act x);
  void ffn_block(int64_t l, Act x);
  void check_finite(Act x, const char* what, int64_t layer);
  // Output rows [first, first + m) of the step's wanted rows through the final norm and the head,
  // into logits_.
  void head_pass(int64_t n, int64_t first, int64_t m);
  void capture(int64_t layer, Act x);

  const Model& m_;
  Backend& be_;
  ForwardOptions opt_;
  std::unique_ptr<MoeLayer> moe_;
  std::vector<Routing> moe_routing_;
  bool moe_on_backend_ = false;  // the backend ran the last step's MoE layers itself (no host routing)
  std::vector<RopeParams> rope_;  // per layer
  int64_t head_rows_;             // rows per pass through the output head (bounds the logits buffer)
  Act x_, h_, q_, k_, v_, att_, o_, ffn_out_, head_in_, logits_;
  // The current step as the backend receives it, and where each output row's logits go.
  std::vector<int32_t> ids_, out_rows_;
  std::vector<SeqRows> seq_rows_;
  std::vector<float*> out_dst_;
  struct CaptureRow {
    int64_t row;
    float* dst;  // [layer][hidden] of this row's snapshot
  };
  std::vector<CaptureRow> capture_rows_;
  std::vector<float> check_buf_;
};

}  // namespace ts
