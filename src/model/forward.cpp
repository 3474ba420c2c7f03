#include "model/forward.h"

#include <cmath>

#include "model/rope.h"
#include "util/error.h"
#include "util/phase_clock.h"

namespace ts {
Forward::Forward(const Model& m, Backend& be, KvCache& kv, const ForwardOptions& opt)
    : m_(m), be_(be), kv_(kv), opt_(opt) {
  const HParams& h = m.hp();
  if (opt_.max_batch < 1) fail("the batch size must be positive");
  const int64_t B = opt_.max_batch, q_width = h.n_head * h.head_dim, kv_width = h.n_head_kv * h.head_dim;
  x_ = be.alloc(B, h.n_embd);
  h_ = be.alloc(B, h.n_embd);
  q_ = be.alloc(B, q_width);
  k_ = be.alloc(B, kv_width);
  v_ = be.alloc(B, kv_width);
  att_ = be.alloc(B, q_width);
  o_ = be.alloc(B, h.n_embd);
  ffn_out_ = be.alloc(B, h.n_embd);
  logits_ = be.alloc(B, h.n_vocab);
  if (h.is_moe()) {
    const Family& f = m.family();
    moe_ = std::make_unique<MoeLayer>(be, MoeShape{h.n_embd, h.n_ff_expert, h.n_expert, h.n_expert_used, f.router, f.expert_activation}, B);
    moe_routing_.resize(h.n_layer);
  } else {
    gate_ = be.alloc(B, h.n_ff);
    up_ = be.alloc(B, h.n_ff);
    ffn_act_ = be.alloc(B, h.n_ff);
  }
}

Forward::~Forward() {
  for (Act* a : {&x_, &h_, &q_, &k_, &v_, &att_, &o_, &gate_, &up_, &ffn_act_, &ffn_out_, &logits_})
    if (a->data) be_.release(*a);
}

void Forward::attention_block(int64_t l, Act x, int64_t n, int64_t pos0) {
  PhaseScope phase(Phase::Attention);
  const HParams& hp = m_.hp();
  const Family& f = m_.family();
  const LayerWeights& w = m_.layer(l);
  Act h = h_.first(n), q = q_.first(n), k = k_.first(n), v = v_.first(n), att = att_.first(n), o = o_.first(n);
  be_.rms_norm(x, w.attn_norm, hp.norm_eps, hp.n_embd, h);
  be_.matmul(w.q, h, q);
  be_.matmul(w.k, h, k);
  be_.matmul(w.v, h, v);
  if (w.q_bias) {
    be_.add_bias(q, w.q_bias);
    be_.add_bias(k, w.k_bias);
    be_.add_bias(v, w.v_bias);
  }
  if (w.q_norm) {
    be_.rms_norm(q, w.q_norm, hp.norm_eps, hp.head_dim, q);
    be_.rms_norm(k, w.k_norm, hp.norm_eps, hp.head_dim, k);
  }
  be_.rope(q, hp.n_head, hp.head_dim, rope_[l]);
  be_.rope(k, hp.n_head_kv, hp.head_dim, rope_[l]);
  AttentionParams p;
  p.n_head = hp.n_head;
  p.n_head_kv = hp.n_head_kv;
  p.head_dim = hp.head_dim;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hp.head_dim)));
  p.window = hp.sliding_window > 0 && f.uses_window && f.uses_window(hp, l) ? hp.sliding_window : 0;
  p.sinks = w.sinks;
  be_.attention(kv_.layers[l], q, k, v, pos0, p, att);
  be_.matmul(w.o, att, o);
  if (w.o_bias) be_.add_bias(o, w.o_bias);
  if (w.post_attn_norm) be_.rms_norm(o, w.post_attn_norm, hp.norm_eps, hp.n_embd, o);
  be_.add(x, o);
}

void Forward::ffn_block(int64_t l, Act x, int64_t n) {
  const HParams& hp = m_.hp();
  const LayerWeights& w = m_.layer(l);
  Act h = h_.first(n), y = ffn_out_.first(n);
  be_.rms_norm(x, w.ffn_norm, hp.norm_eps, hp.n_embd, h);
  if (moe_) {
    NextRouter next;  // lets the store read the next layer's likely experts ahead
    if (l + 1 < hp.n_layer && m_.layer(l + 1).router.data) next = {&m_.layer(l + 1).router, m_.layer(l + 1).router_bias, m_.layer(l + 1).ffn_norm, hp.norm_eps};
    moe_->forward(m_.experts(), l, w.router, w.router_bias, h, y, opt_.expert_order, x, next);
    moe_routing_[l] = moe_->last_routing();
  } else {
    Act g = gate_.first(n), u = up_.first(n), a = ffn_act_.first(n);
    be_.matmul(w.ffn_gate, h, g);
    be_.matmul(w.ffn_up, h, u);
    be_.glu(m_.family().ffn_activation, g, u, a);
    be_.matmul(w.ffn_down, a, y);
  }
  if (w.post_ffn_norm) be_.rms_norm(y, w.post_ffn_norm, hp.norm_eps, hp.n_embd, y);
  be_.add(x, y);
}

void Forward::run(const int32_t* ids, int64_t n, bool all_logits, float* logits) {
  PhaseScope phase(Phase::DenseCompute);  // attention and the MoE layer mark their own phases
  const HParams& hp = m_.hp();
  const Family& f = m_.family();
  if (n < 1 || n > opt_.max_batch) fail("internal error: batch of {} tokens (1..{} allowed)", n, opt_.max_batch);
  const int64_t pos0 = kv_.n_past;
  if (pos0 + n > kv_.n_ctx)
    fail("context is full: {} tokens would need {} positions, the limit is {} (raise it with --ctx)", n, pos0 + n, kv_.n_ctx);
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= hp.n_vocab) fail("token id {} is out of range (the vocabulary has {} tokens)", ids[i], hp.n_vocab);

  // One table per distinct rotary base (gemma has two), shared by the layers that use it.
  rope_.resize(hp.n_layer);
  auto base_of = [&](int64_t l) { return f.rope_base ? f.rope_base(hp, l) : hp.rope_base; };
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    int64_t same = 0;
    while (same < l && base_of(same) != base_of(l)) ++same;
    rope_[l] = same < l ? rope_[same] : make_rope_table(hp, f.rope_layout, base_of(l), pos0, n);
  }

  Act x = x_.first(n);
  be_.embed(m_.token_embd(), ids, n, x);
  if (f.embed_scale) be_.scale(x, f.embed_scale(hp));
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    attention_block(l, x, n, pos0);
    ffn_block(l, x, n);
  }
  kv_.n_past += n;

  // Only the rows whose logits are wanted go through the head (the largest matrix of small models).
  Act last = all_logits ? x : Act{x.row(n - 1), 1, x.dim};
  Act h = h_.first(last.n);
  be_.rms_norm(last, m_.output_norm(), hp.norm_eps, hp.n_embd, h);
  Act out = logits_.first(last.n);
  be_.matmul(m_.output(), h, out);
  be_.to_host(out, logits);
}

}  // namespace ts
