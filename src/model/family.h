// A model family is the shared layer flow (model/forward.cpp) plus the few contracts in which
// architectures differ. Each families/<name>.cpp fills one of these, with a comment at each choice
// saying why; the flow is chosen from general.architecture, never guessed from tensor names.
#pragma once
#include <string_view>

#include "backend/backend.h"
#include "model/hparams.h"
#include "moe/router.h"

namespace ts {

struct Family {
  std::string_view arch;
  RopeParams::Layout rope_layout = RopeParams::Layout::AdjacentPairs;
  bool qk_norm = false;            // per-head RMS norm of q and k before RoPE
  bool attn_bias = false;          // q/k/v/o projection biases, added before RoPE
  bool attn_sinks = false;         // a learned per-head logit in the softmax denominator
  bool sandwich_norms = false;     // extra norms on the attention and FFN outputs before the residual
  std::string_view ffn_norm = "ffn_norm";  // tensor name of the norm in front of the FFN / MoE
  Activation ffn_activation = Activation::SwiGLU;
  Activation expert_activation = Activation::SwiGLU;
  bool expert_bias = false;        // per-expert f32 biases on gate, up and down
  RouterContract router = RouterContract::SoftmaxTopKRenorm;
  // Which layers attend through the sliding window (only when hparams.sliding_window > 0).
  bool (*uses_window)(const HParams&, int64_t layer) = nullptr;
  // Input embedding multiplier (gemma scales by sqrt(n_embd)); nullptr means 1.
  float (*embed_scale)(const HParams&) = nullptr;
  // Rotary base of a layer (gemma's local layers use another); nullptr means hparams.rope_base.
  double (*rope_base)(const HParams&, int64_t layer) = nullptr;
  // Whether rope.scaling applies to a layer (gemma's local layers rotate unscaled); nullptr: all.
  bool (*rope_scaled)(const HParams&, int64_t layer) = nullptr;
};

// The family for a GGUF general.architecture, or a clear error listing the supported ones.
const Family& family_for(std::string_view arch);

// Defined one per file in model/families/.
const Family& llama_family();
const Family& qwen3_family();
const Family& qwen3moe_family();
const Family& gpt_oss_family();
const Family& gemma3_family();

}  // namespace ts
