// A loaded model: hyper-parameters, its family's contracts, the resident core's weights bound to
// a backend, and the store its routed experts come from.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf.h"
#include "model/family.h"
#include "model/expert_binding.h"
#include "model/hparams.h"

namespace ts {

struct LayerWeights {
  const float* attn_norm = nullptr;
  Mat q, k, v, o;
  const float *q_bias = nullptr, *k_bias = nullptr, *v_bias = nullptr, *o_bias = nullptr;
  const float *q_norm = nullptr, *k_norm = nullptr;            // qk_norm families
  const float* sinks = nullptr;                                 // attn_sinks families
  const float *post_attn_norm = nullptr, *post_ffn_norm = nullptr;  // sandwich-norm families
  const float* ffn_norm = nullptr;
  Mat ffn_gate, ffn_up, ffn_down;  // dense layers
  Mat router;                      // MoE layers
  const float* router_bias = nullptr;
};

struct LoadOptions {
  ResidencyOptions experts;  // where routed experts live (MoE models)
  RunShape run;              // the run's context and batch, for the auto residency's budget
};

class Model {
 public:
  // Opens and validates a GGUF model; every tensor the family needs is bound to `be` here, and the
  // routed experts get the store `o.experts` chooses. A run of shape `o.run` that would not fit in
  // the memory the process may use is refused here, with the sizes, before anything big is read or
  // allocated (check_run_memory).
  static std::unique_ptr<Model> load(const std::string& path, Backend& be, const LoadOptions& o = {});

  const GgufFile& gguf() const { return *gguf_; }
  const HParams& hp() const { return hp_; }
  const Family& family() const { return *family_; }
  const Mat& token_embd() const { return token_embd_; }
  const Mat& output() const { return output_; }
  const float* output_norm() const { return output_norm_; }
  const float* rope_freqs() const { return rope_freqs_; }  // rope_freqs.weight, or null
  const LayerWeights& layer(int64_t l) const { return layers_[l]; }
  ExpertStore& experts() const { return *experts_.store; }
  const std::shared_ptr<const ExpertSource>& expert_source() const { return experts_.source; }
  const ResidencyChoice& residency() const { return experts_.choice; }
  // The mapped weights a run keeps in memory: the whole file of a dense model, the resident core
  // (every tensor but the experts) of an MoE model (model/memory_estimate.h says why).
  uint64_t resident_weight_bytes() const { return resident_weights_; }

 private:
  std::unique_ptr<GgufFile> gguf_;
  HParams hp_;
  const Family* family_ = nullptr;
  Mat token_embd_, output_;
  const float* output_norm_ = nullptr;
  const float* rope_freqs_ = nullptr;
  std::vector<LayerWeights> layers_;
  uint64_t resident_weights_ = 0;
  BoundExperts experts_;
};

}  // namespace ts
