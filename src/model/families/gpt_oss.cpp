// gpt-oss: attention with biases, sinks and alternating sliding windows; YaRN rotary; a biased
// router; MXFP4 experts with biases and a clamped SwiGLU.
#include "model/family.h"

namespace ts {
namespace {

// Even layers attend through the sliding window (128 in the released models), odd layers see the
// whole context. Swapping the parity still runs and still produces fluent-looking text.
bool even_layers_windowed(const HParams&, int64_t layer) { return layer % 2 == 0; }

}  // namespace

const Family& gpt_oss_family() {
  static const Family f = [] {
    Family x;
    x.arch = "gpt-oss";
    x.rope_layout = RopeParams::Layout::NeoX;  // YaRN parameters come from rope.scaling.* metadata
    x.attn_bias = true;                        // biases are applied before RoPE
    // One learned logit per query head joins the softmax denominator only (no value): a head can
    // put its attention mass "nowhere" instead of being forced onto some token.
    x.attn_sinks = true;
    x.uses_window = even_layers_windowed;
    // The norm in front of the MoE is stored as post_attention_norm in GGUF.
    x.ffn_norm = "post_attention_norm";
    // The router bias is added to the logits BEFORE the top-k, and the softmax runs over the four
    // selected logits only: with the bias after the top-k the wrong experts are selected and the
    // text is still fluent, so the mistake hides. No renormalisation, no per-expert scale.
    x.router = RouterContract::BiasedTopKSoftmax;
    // gate = min(gate, 7), up = clamp(up, -7, 7), out = gate * sigmoid(1.702 * gate) * (up + 1).
    x.expert_activation = Activation::ClampedSwiGLU;
    x.expert_bias = true;
    return x;
  }();
  return f;
}

}  // namespace ts
