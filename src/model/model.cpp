#include "model/model.h"

#include <optional>

#include "install/manifest.h"
#include "model/memory_estimate.h"
#include "model/tensor_binding.h"
#include "util/error.h"

namespace ts {

std::unique_ptr<Model> Model::load(const std::string& path, Backend& be, const LoadOptions& o) {
  auto m = std::make_unique<Model>();
  // An install directory (turbospark pack): the resident tensors are a GGUF, the experts are blobs.
  std::optional<InstallManifest> install;
  if (is_install_dir(path)) {
    install = read_manifest(path);
    m->gguf_ = GgufFile::open(install->path(kResidentName));
  } else {
    m->gguf_ = GgufFile::open(path);
    if (m->gguf_->get_bool(kResidentCoreKey, false))
      fail("'{}' holds only the resident tensors of an install directory: pass the directory to -m", path);
  }
  const GgufFile& g = *m->gguf_;
  m->hp_ = HParams::from_gguf(g);
  const HParams& h = m->hp_;
  m->family_ = &family_for(h.arch);
  const Family& f = *m->family_;

  const int64_t q_width = h.n_head * h.head_dim, kv_width = h.n_head_kv * h.head_dim;
  m->token_embd_ = bind_matrix(g, be, "token_embd.weight", h.n_embd, h.n_vocab);
  // Tied embeddings (SmolLM2, gemma): without output.weight the head is the embedding table.
  m->output_ = has_tensor(g, "output.weight") ? bind_matrix(g, be, "output.weight", h.n_embd, h.n_vocab) : m->token_embd_;
  m->output_norm_ = bind_vector(g, be, "output_norm.weight", h.n_embd);
  // Llama 3.1's per-frequency divisors: ignoring them runs fine and rotates long contexts wrongly.
  if (has_tensor(g, "rope_freqs.weight")) m->rope_freqs_ = bind_vector(g, be, "rope_freqs.weight", h.n_rot / 2);

  m->layers_.resize(h.n_layer);
  for (int64_t l = 0; l < h.n_layer; ++l) {
    LayerWeights& w = m->layers_[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    w.attn_norm = bind_vector(g, be, p + "attn_norm.weight", h.n_embd);
    w.q = bind_matrix(g, be, p + "attn_q.weight", h.n_embd, q_width);
    w.k = bind_matrix(g, be, p + "attn_k.weight", h.n_embd, kv_width);
    w.v = bind_matrix(g, be, p + "attn_v.weight", h.n_embd, kv_width);
    w.o = bind_matrix(g, be, p + "attn_output.weight", q_width, h.n_embd);
    if (f.attn_bias) {
      w.q_bias = bind_vector(g, be, p + "attn_q.bias", q_width);
      w.k_bias = bind_vector(g, be, p + "attn_k.bias", kv_width);
      w.v_bias = bind_vector(g, be, p + "attn_v.bias", kv_width);
      w.o_bias = bind_vector(g, be, p + "attn_output.bias", h.n_embd);
    }
    if (f.qk_norm) {
      w.q_norm = bind_vector(g, be, p + "attn_q_norm.weight", h.head_dim);
      w.k_norm = bind_vector(g, be, p + "attn_k_norm.weight", h.head_dim);
    }
    if (f.attn_sinks) w.sinks = bind_vector(g, be, p + "attn_sinks.weight", h.n_head);
    if (f.sandwich_norms) {
      w.post_attn_norm = bind_vector(g, be, p + "post_attention_norm.weight", h.n_embd);
      w.post_ffn_norm = bind_vector(g, be, p + "post_ffw_norm.weight", h.n_embd);
    }
    w.ffn_norm = bind_vector(g, be, p + std::string(f.ffn_norm) + ".weight", h.n_embd);
    if (h.is_moe()) {
      if (!has_tensor(g, p + "ffn_gate_inp.weight"))
        fail("'{}': MoE layer {} has no router tensor '{}ffn_gate_inp.weight'", g.path(), l, p);
      w.router = bind_matrix(g, be, p + "ffn_gate_inp.weight", h.n_embd, h.n_expert);
      if (f.router == RouterContract::BiasedTopKSoftmax) w.router_bias = bind_vector(g, be, p + "ffn_gate_inp.bias", h.n_expert);
    } else {
      if (h.n_ff <= 0) fail("'{}': {}.feed_forward_length is missing", g.path(), h.arch);
      w.ffn_gate = bind_matrix(g, be, p + "ffn_gate.weight", h.n_embd, h.n_ff);
      w.ffn_up = bind_matrix(g, be, p + "ffn_up.weight", h.n_embd, h.n_ff);
      w.ffn_down = bind_matrix(g, be, p + "ffn_down.weight", h.n_ff, h.n_embd);
    }
  }
  if (h.is_moe()) {
    if (h.n_ff_expert <= 0) fail("'{}': the expert width (expert_feed_forward_length) is missing", g.path());
    auto src = install ? expert_source_from_install(*install, h, f) : expert_source_from_gguf(g, h, f);
    m->resident_weights_ = install ? g.file().size() : g.file().size() - src->total_expert_bytes();
    m->experts_ = bind_experts(std::move(src), g, m->resident_weights_, h, f.expert_activation, o.experts, o.run, be);
    prefault_resident_core(g);
  } else {
    m->resident_weights_ = g.file().size();
    check_run_memory(estimate_run_memory(h, m->resident_weights_, o.run.n_ctx, o.run.batch, o.run.logit_rows));
  }
  return m;
}

}  // namespace ts
