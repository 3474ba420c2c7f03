#include "model/hparams.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "model/family.h"
#include "util/error.h"

namespace ts {
namespace {

// Every `<arch>.` key the engine knows. A key under the architecture's prefix that is not listed
// here may change the math in a way the forward pass does not implement (soft-capping, attention
// or logit scales, shared experts, other RoPE variants...), so it is refused by name instead of
// being ignored: ignoring such a key gives fluent but wrong output, which nobody notices.
constexpr std::string_view kKnownKeys[] = {
    "context_length", "embedding_length", "block_count", "feed_forward_length", "vocab_size",
    "attention.head_count", "attention.head_count_kv", "attention.key_length", "attention.value_length",
    "attention.layer_norm_rms_epsilon", "attention.sliding_window", "attention.sliding_window_pattern",
    "rope.dimension_count", "rope.freq_base", "rope.freq_base_swa", "rope.scale_linear",
    "rope.scaling.type", "rope.scaling.factor", "rope.scaling.original_context_length",
    "rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow",
    "rope.scaling.finetuned",  // informational: whether the model was fine-tuned with the scaling
    "expert_count", "expert_used_count", "expert_feed_forward_length",
    "pooling_type",            // informational for causal LMs (embedding heads are not loaded)
    "attention.causal",        // checked below: only causal attention is implemented
};

void refuse_unknown_keys(const GgufFile& g, const std::string& p) {
  for (const auto& [key, value] : g.metadata()) {
    if (!key.starts_with(p)) continue;
    const std::string_view k = std::string_view(key).substr(p.size());
    if (std::find(std::begin(kKnownKeys), std::end(kKnownKeys), k) != std::end(kKnownKeys)) continue;
    const bool softcap = k.find("softcap") != std::string_view::npos;
    fail("'{}': metadata key '{}' ({}) {}; TurboSpark does not implement it and refuses the model rather than compute "
         "different logits", g.path(), key, value.to_string(4),
         softcap ? "asks for logit soft-capping" : "may change the model's math");
  }
  if (!g.get_bool(p + "attention.causal", true))
    fail("'{}': {}attention.causal = false: only causal attention is implemented", g.path(), p);
}

// Every block of the forward pass reads tensors named "blk.N.*". A block_count that does not match
// the blocks the file holds is refused here, before anything proportional to it is allocated: a
// small file declaring 2^24 blocks once took gigabytes of per-layer bookkeeping before the first
// missing tensor was noticed.
void check_block_count(const GgufFile& g, const std::string& key, int64_t n_layer) {
  std::vector<uint8_t> seen;  // bounded by the tensor count, not by the metadata
  int64_t max_block = -1;
  for (const GgufTensor& t : g.tensors()) {
    if (!t.name.starts_with("blk.")) continue;
    const std::string_view rest = std::string_view(t.name).substr(4);
    int64_t b = -1;
    const auto r = std::from_chars(rest.data(), rest.data() + rest.size(), b);
    if (r.ec != std::errc() || r.ptr == rest.data() + rest.size() || *r.ptr != '.' || b < 0 ||
        b >= static_cast<int64_t>(g.tensors().size()))
      fail("'{}': tensor '{}' has a malformed block number", g.path(), t.name);
    if (b >= static_cast<int64_t>(seen.size())) seen.resize(b + 1, 0);
    seen[b] = 1;
    max_block = std::max(max_block, b);
  }
  if (max_block + 1 != n_layer)
    fail("'{}': {} is {}, but the file holds tensors for {} blocks", g.path(), key, n_layer, max_block + 1);
  for (int64_t b = 0; b < n_layer; ++b)
    if (!seen[b]) fail("'{}': {} is {}, but block {} has no tensors", g.path(), key, n_layer, b);
}

// The other counts are checked against the shapes of the tensors that carry them, so that a wrong
// count is reported under its metadata key (tensor binding checks every tensor again later).
void check_dim(const GgufFile& g, const char* tensor, size_t dim, int64_t want, const std::string& what) {
  const GgufTensor* t = g.find_tensor(tensor);
  if (t && static_cast<int64_t>(t->dim(dim)) != want)
    fail("'{}': {} is {}, but tensor '{}' has {} there (shape [{}])", g.path(), what, want, tensor, t->dim(dim),
         fmt::join(t->dims, ", "));
}

// gemma3 and gpt-oss alternate windowed and global layers; llama.cpp writes the pattern either as a
// period n (layer l is windowed when l % n < n - 1) or as one bool per layer. The family's pattern
// is fixed in code, so a file asking for another one is refused rather than run with the wrong one.
void check_window_pattern(const GgufFile& g, const HParams& h, const Family& f, const std::string& key) {
  const GgufValue* v = g.find(key);
  if (!v) return;
  auto windowed = [&](int64_t l) -> bool {
    if (v->type == GgufValueType::ARRAY) {
      if (v->ints.size() != static_cast<size_t>(h.n_layer))
        fail("'{}': {} has {} entries for {} layers", g.path(), key, v->array_size(), h.n_layer);
      return v->ints[l] != 0;
    }
    const int64_t n = g.get_int(key);
    return n > 0 && l % n < n - 1;
  };
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const bool ours = f.uses_window && f.uses_window(h, l);
    if (windowed(l) != ours)
      fail("'{}': {} = {} makes layer {} {}, but the {} family's layer pattern differs; not supported", g.path(), key,
           v->to_string(8), l, windowed(l) ? "windowed" : "global", h.arch);
  }
}

// RoPE scaling changes the math: a type we do not implement is refused, never ignored (the text
// would stay fluent and be wrong). Old converters wrote linear scaling as rope.scale_linear.
void read_rope_scaling(const GgufFile& g, HParams& h, const std::string& p) {
  const bool old_linear = g.has(p + "rope.scale_linear");
  const std::string type = g.get_string(p + "rope.scaling.type", old_linear ? "linear" : "none");
  if (type == "none") return;
  if (type == "yarn") {
    h.yarn_factor = g.get_float(p + "rope.scaling.factor");
    h.yarn_orig_ctx = g.get_float(p + "rope.scaling.original_context_length");
    h.yarn_beta_fast = g.get_float(p + "rope.scaling.yarn_beta_fast", 32.0);
    h.yarn_beta_slow = g.get_float(p + "rope.scaling.yarn_beta_slow", 1.0);
    if (!(h.yarn_factor >= 1) || !(h.yarn_orig_ctx > 0) || !std::isfinite(h.yarn_factor) || !std::isfinite(h.yarn_beta_fast) ||
        !std::isfinite(h.yarn_beta_slow))
      fail("'{}': invalid YaRN rope scaling parameters", g.path());
    return;
  }
  if (type == "linear") {
    const std::string key = p + (g.has(p + "rope.scaling.factor") || !old_linear ? "rope.scaling.factor" : "rope.scale_linear");
    h.rope_linear_factor = g.get_float(key, 1.0);
    if (!(h.rope_linear_factor > 0) || !std::isfinite(h.rope_linear_factor))
      fail("'{}': {} must be positive, got {}", g.path(), key, h.rope_linear_factor);
    return;
  }
  fail("'{}': {}rope.scaling.type = '{}' is not supported (supported: none, linear, yarn)", g.path(), p, type);
}

}  // namespace

HParams HParams::from_gguf(const GgufFile& g) {
  HParams h;
  h.arch = g.get_string("general.architecture");
  const Family& family = family_for(h.arch);
  const std::string p = h.arch + ".";
  refuse_unknown_keys(g, p);
  auto req = [&](const char* key) {
    const int64_t v = g.get_int(p + key);
    if (v <= 0) fail("'{}': {}{} must be positive, got {}", g.path(), p, key, v);
    return v;
  };
  h.n_embd = req("embedding_length");
  h.n_layer = req("block_count");
  check_block_count(g, p + "block_count", h.n_layer);
  h.n_head = req("attention.head_count");
  h.n_head_kv = g.get_int(p + "attention.head_count_kv", h.n_head);
  h.n_ctx_train = g.get_int(p + "context_length", 4096);
  if (h.n_ctx_train <= 0) fail("'{}': {}context_length must be positive, got {}", g.path(), p, h.n_ctx_train);
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
  if (h.n_ff < 0) fail("'{}': {}feed_forward_length is negative", g.path(), p);
  const double eps = g.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5);
  h.norm_eps = static_cast<float>(eps);
  if (!(h.norm_eps > 0) || !std::isfinite(h.norm_eps)) fail("'{}': the RMS norm epsilon must be positive, got {}", g.path(), eps);
  h.rope_base = g.get_float(p + "rope.freq_base", 10000.0);
  if (!(h.rope_base > 1) || !std::isfinite(h.rope_base)) fail("'{}': rope.freq_base must be > 1, got {}", g.path(), h.rope_base);
  h.rope_base_swa = g.get_float(p + "rope.freq_base_swa", h.rope_base_swa);
  if (!(h.rope_base_swa > 1) || !std::isfinite(h.rope_base_swa))
    fail("'{}': rope.freq_base_swa must be > 1, got {}", g.path(), h.rope_base_swa);
  read_rope_scaling(g, h, p);
  h.sliding_window = g.get_int(p + "attention.sliding_window", 0);
  if (h.sliding_window < 0) fail("'{}': negative sliding window", g.path());
  if (h.sliding_window > 0 && !family.uses_window)
    fail("'{}': {}attention.sliding_window = {}, but the {} family has no windowed layers; not supported", g.path(), p,
         h.sliding_window, h.arch);
  check_window_pattern(g, h, family, p + "attention.sliding_window_pattern");
  h.n_expert = g.get_int(p + "expert_count", 0);
  h.n_expert_used = g.get_int(p + "expert_used_count", 0);
  h.n_ff_expert = g.get_int(p + "expert_feed_forward_length", h.n_ff);
  if (h.n_expert < 0 || h.n_expert_used < 0 || h.n_ff_expert < 0) fail("'{}': negative expert counts", g.path());
  if (h.n_expert > 0) {
    if (h.n_expert_used == 0) fail("'{}': {}expert_used_count is missing or 0 for an MoE model", g.path(), p);
    if (h.n_expert_used > h.n_expert)
      fail("'{}': expert_used_count {} exceeds expert_count {}", g.path(), h.n_expert_used, h.n_expert);
  }
  // The vocabulary size: the explicit key, else the embedding table's row count.
  h.n_vocab = g.get_int(p + "vocab_size", 0);
  if (h.n_vocab == 0) {
    if (const GgufTensor* t = g.find_tensor("token_embd.weight")) h.n_vocab = static_cast<int64_t>(t->dim(1));
  }
  if (h.n_vocab <= 0 || h.n_vocab > INT32_MAX) fail("'{}': cannot determine the vocabulary size", g.path());

  check_dim(g, "token_embd.weight", 0, h.n_embd, p + "embedding_length");
  check_dim(g, "token_embd.weight", 1, h.n_vocab, p + "vocab_size");
  check_dim(g, "blk.0.attn_q.weight", 1, h.n_head * h.head_dim, "head_count x key_length");
  check_dim(g, "blk.0.attn_k.weight", 1, h.n_head_kv * h.head_dim, "head_count_kv x key_length");
  if (h.is_moe()) {
    check_dim(g, "blk.0.ffn_gate_inp.weight", 1, h.n_expert, p + "expert_count");
    check_dim(g, "blk.0.ffn_gate_exps.weight", 1, h.n_ff_expert, p + "expert_feed_forward_length");
  } else {
    if (g.find_tensor("blk.0.ffn_gate_inp.weight"))
      fail("'{}': the file holds routed-expert tensors but {}expert_count is missing or 0", g.path(), p);
    check_dim(g, "blk.0.ffn_gate.weight", 1, h.n_ff, p + "feed_forward_length");
  }
  return h;
}

}  // namespace ts
