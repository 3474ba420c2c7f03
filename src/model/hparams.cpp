#include "model/hparams.h"

#include <cmath>

#include "gguf/gguf.h"
#include "util/error.h"

namespace ts {

HParams HParams::from_gguf(const GgufFile& g) {
  HParams h;
  h.arch = g.get_string("general.architecture");
  const std::string p = h.arch + ".";
  auto req = [&](const char* key) {
    const int64_t v = g.get_int(p + key);
    if (v <= 0) fail("'{}': {}{} must be positive, got {}", g.path(), p, key, v);
    return v;
  };
  h.n_embd = req("embedding_length");
  h.n_layer = req("block_count");
  h.n_head = req("attention.head_count");
  h.n_head_kv = g.get_int(p + "attention.head_count_kv", h.n_head);
  h.n_ctx_train = g.get_int(p + "context_length", 4096);
  if (h.n_head_kv <= 0 || h.n_head % h.n_head_kv != 0)
    fail("'{}': {} query heads cannot be grouped over {} key/value heads", g.path(), h.n_head, h.n_head_kv);
  if (!g.has(p + "attention.key_length") && h.n_embd % h.n_head != 0)
    fail("'{}': embedding width {} is not a multiple of the head count {}", g.path(), h.n_embd, h.n_head);
  h.head_dim = g.get_int(p + "attention.key_length", h.n_embd / h.n_head);
  if (g.get_int(p + "attention.value_length", h.head_dim) != h.head_dim)
    fail("'{}': key and value head widths differ; not supported", g.path());
  h.n_rot = g.get_int(p + "rope.dimension_count", h.head_dim);
  if (h.head_dim <= 0 || h.head_dim % 2 || h.n_rot <= 0 || h.n_rot > h.head_dim || h.n_rot % 2)
    fail("'{}': invalid head width {} / rotary dimensions {}", g.path(), h.head_dim, h.n_rot);
  h.n_ff = g.get_int(p + "feed_forward_length", 0);
  h.norm_eps = static_cast<float>(g.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(h.norm_eps > 0)) fail("'{}': the RMS norm epsilon must be positive", g.path());
  h.rope_base = g.get_float(p + "rope.freq_base", 10000.0);
  if (!(h.rope_base > 1)) fail("'{}': rope.freq_base must be > 1, got {}", g.path(), h.rope_base);
  // RoPE scaling changes the math: a type we do not implement is refused, never ignored (the text
  // would stay fluent and be wrong).
  const std::string scaling = g.get_string(p + "rope.scaling.type", "none");
  if (scaling == "yarn") {
    h.yarn_factor = g.get_float(p + "rope.scaling.factor");
    h.yarn_orig_ctx = g.get_float(p + "rope.scaling.original_context_length");
    h.yarn_beta_fast = g.get_float(p + "rope.scaling.yarn_beta_fast", 32.0);
    h.yarn_beta_slow = g.get_float(p + "rope.scaling.yarn_beta_slow", 1.0);
    if (!(h.yarn_factor >= 1) || !(h.yarn_orig_ctx > 0)) fail("'{}': invalid YaRN rope scaling parameters", g.path());
  } else if (scaling == "linear") {
    h.rope_linear_factor = g.get_float(p + "rope.scaling.factor", 1.0);
    if (!(h.rope_linear_factor > 0) || !std::isfinite(h.rope_linear_factor))
      fail("'{}': {}rope.scaling.factor must be positive, got {}", g.path(), p, h.rope_linear_factor);
  } else if (scaling != "none") {
    fail("'{}': {}rope.scaling.type '{}' is not supported (none, linear and yarn are)", g.path(), p, scaling);
  }
  h.sliding_window = g.get_int(p + "attention.sliding_window", 0);
  if (h.sliding_window < 0) fail("'{}': negative sliding window", g.path());
  h.n_expert = g.get_int(p + "expert_count", 0);
  h.n_expert_used = g.get_int(p + "expert_used_count", 0);
  h.n_ff_expert = g.get_int(p + "expert_feed_forward_length", h.n_ff);
  if (h.n_expert < 0 || h.n_expert_used < 0) fail("'{}': negative expert counts", g.path());
  if (h.n_expert > 0) {
    if (h.n_expert_used == 0) fail("'{}': {}expert_used_count is missing or 0 for an MoE model", g.path(), p);
    if (h.n_expert_used > h.n_expert)
      fail("'{}': expert_used_count {} exceeds expert_count {}", g.path(), h.n_expert_used, h.n_expert);
  }
  // The vocabulary size: the explicit key, else the embedding table's row count (checked later).
  h.n_vocab = g.get_int(p + "vocab_size", 0);
  if (h.n_vocab == 0) {
    if (const GgufTensor* t = g.find_tensor("token_embd.weight")) h.n_vocab = static_cast<int64_t>(t->dim(1));
  }
  if (h.n_vocab <= 0) fail("'{}': cannot determine the vocabulary size", g.path());
  return h;
}

}  // namespace ts
