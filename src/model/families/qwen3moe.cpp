// Qwen3-MoE: Qwen3's attention with routed experts.
#include "model/family.h"

namespace ts {

const Family& qwen3moe_family() {
  static const Family f = [] {
    Family x = qwen3_family();
    x.arch = "qwen3moe";
    // Softmax over all experts, top-k, then renormalise the k weights (norm_topk_prob = true):
    // without the renormalisation the expert output is scaled down by the mass left unselected.
    x.router = RouterContract::SoftmaxTopKRenorm;
    return x;
  }();
  return f;
}

}  // namespace ts
