// Qwen3 dense: llama's flow with per-head q/k RMS norms and NeoX rotary layout.
#include "model/family.h"

namespace ts {

const Family& qwen3_family() {
  static const Family f = [] {
    Family x;
    x.arch = "qwen3";
    // Qwen3 normalises each head's q and k (weights of head_dim) before RoPE; skipping it leaves
    // attention logits unbounded, which is what the norm was added to prevent.
    x.qk_norm = true;
    // HF-style rotary: pairs are (x[i], x[i + d/2]); the converter does not permute qwen weights.
    x.rope_layout = RopeParams::Layout::NeoX;
    return x;
  }();
  return f;
}

}  // namespace ts
