// llama (and Mixtral-style Llama-MoE, which is `llama` with expert_count > 0): the baseline flow.
#include "model/family.h"

namespace ts {

const Family& llama_family() {
  static const Family f = [] {
    Family x;
    x.arch = "llama";
    // GGUF's llama converter permutes q/k rows so that RoPE rotates adjacent pairs (x[2i], x[2i+1]);
    // rotating halves instead gives wrong positions while the text can still look plausible.
    x.rope_layout = RopeParams::Layout::AdjacentPairs;
    // Mixtral: softmax over all experts, top-k, renormalise the selected weights to sum to 1.
    x.router = RouterContract::SoftmaxTopKRenorm;
    return x;
  }();
  return f;
}

}  // namespace ts
