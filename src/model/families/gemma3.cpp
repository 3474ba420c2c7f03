// Gemma 3 (the family of the Gemma-3-270M real model): qwen3-like attention with sandwich norms,
// a GELU FFN, scaled embeddings, and five local (sliding-window) layers for every global one.
#include <cmath>

#include "model/family.h"

namespace ts {
namespace {

// Five of every six layers attend through the sliding window (512 in Gemma-3-270M); every sixth
// layer is global.
bool local_layer(const HParams&, int64_t layer) { return layer % 6 < 5; }

// Local layers rotate with rope.freq_base_swa (10000 when absent, as in llama.cpp); the global ones
// use rope.freq_base (1e6). Using the global base everywhere blurs short-range positions on the
// local layers.
double rope_base(const HParams& h, int64_t layer) { return local_layer(h, layer) ? h.rope_base_swa : h.rope_base; }

// rope.scaling (linear, factor 8 on Gemma 3 4B and larger) stretches the global layers only: the
// local layers never see more than the window, so they keep their trained rotation.
bool rope_scaled(const HParams& h, int64_t layer) { return !local_layer(h, layer); }

// Gemma multiplies input embeddings by sqrt(n_embd) (tied with the output head, which is not scaled).
float embed_scale(const HParams& h) { return std::sqrt(static_cast<float>(h.n_embd)); }

}  // namespace

const Family& gemma3_family() {
  static const Family f = [] {
    Family x;
    x.arch = "gemma3";
    x.rope_layout = RopeParams::Layout::NeoX;
    x.qk_norm = true;
    // The attention and FFN outputs are RMS-normed (post_attention_norm, post_ffw_norm) before
    // they join the residual; the GGUF converter has already folded Gemma's (1 + w) into w.
    x.sandwich_norms = true;
    x.ffn_activation = Activation::GeluTanhGLU;
    x.uses_window = local_layer;
    x.rope_base = rope_base;
    x.rope_scaled = rope_scaled;
    x.embed_scale = embed_scale;
    // Attention scale: 1/sqrt(head_dim), which equals query_pre_attn_scalar^-1/2 for the
    // 270M/1B/4B/12B models (the key is not stored in GGUF).
    return x;
  }();
  return f;
}

}  // namespace ts
