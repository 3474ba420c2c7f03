#include <string>

#include "gguf/gguf.h"
#include "model/tensor_binding.h"
#include "moe/expert_store.h"
#include "util/error.h"

namespace ts {
namespace {

struct LayerExperts {
  Mat gate, up, down;  // the whole [n_expert] stack; rows = n_expert * per-expert rows
  const float *gate_bias = nullptr, *up_bias = nullptr, *down_bias = nullptr;
};

class ResidentExperts final : public ExpertStore {
 public:
  ResidentExperts(std::vector<LayerExperts> layers, int64_t n_expert, int64_t n_embd, int64_t n_ff)
      : layers_(std::move(layers)), n_expert_(n_expert), n_embd_(n_embd), n_ff_(n_ff) {}

  ExpertView get(int64_t layer, int64_t e) override {
    const LayerExperts& l = layers_[layer];
    ExpertView v;
    v.gate = slice(l.gate, e, n_ff_);
    v.up = slice(l.up, e, n_ff_);
    v.down = slice(l.down, e, n_embd_);
    if (l.gate_bias) {
      v.gate_bias = l.gate_bias + e * n_ff_;
      v.up_bias = l.up_bias + e * n_ff_;
      v.down_bias = l.down_bias + e * n_embd_;
    }
    return v;
  }
  bool resident() const override { return true; }

 private:
  static Mat slice(const Mat& stack, int64_t e, int64_t rows) {
    Mat m = stack;
    m.rows = rows;
    m.data = static_cast<const uint8_t*>(stack.data) + static_cast<size_t>(e * rows) * stack.row_stride;
    return m;
  }
  std::vector<LayerExperts> layers_;
  int64_t n_expert_, n_embd_, n_ff_;
};

}  // namespace

std::unique_ptr<ExpertStore> make_resident_experts(const GgufFile& g, Backend& be, int64_t n_layer,
                                                   int64_t n_expert, int64_t n_embd, int64_t n_ff,
                                                   bool with_bias) {
  std::vector<LayerExperts> layers(n_layer);
  for (int64_t l = 0; l < n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    layers[l].gate = bind_matrix(g, be, p + "ffn_gate_exps.weight", n_embd, n_ff, n_expert);
    layers[l].up = bind_matrix(g, be, p + "ffn_up_exps.weight", n_embd, n_ff, n_expert);
    layers[l].down = bind_matrix(g, be, p + "ffn_down_exps.weight", n_ff, n_embd, n_expert);
    if (with_bias) {
      layers[l].gate_bias = bind_vector(g, be, p + "ffn_gate_exps.bias", n_ff, n_expert);
      layers[l].up_bias = bind_vector(g, be, p + "ffn_up_exps.bias", n_ff, n_expert);
      layers[l].down_bias = bind_vector(g, be, p + "ffn_down_exps.bias", n_embd, n_expert);
    }
  }
  return std::make_unique<ResidentExperts>(std::move(layers), n_expert, n_embd, n_ff);
}

}  // namespace ts
