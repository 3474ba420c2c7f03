#include "model/forward.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"
#include "util/phase_clock.h"

namespace ts {
namespace {

// The logits buffer holds at most this many bytes; longer all-logits runs go through the head in
// passes (each row's logits are the same bytes however the rows are grouped).
constexpr int64_t kLogitsBufferBytes = int64_t{64} << 20;

RopeParams rope_for_layer(const Model& m, int64_t l) {
  const HParams& h = m.hp();
  const Family& f = m.family();
  RopeParams p;
  p.layout = f.rope_layout;
  p.n_rot = h.n_rot;
  p.base = f.rope_base ? f.rope_base(h, l) : h.rope_base;
  if (!f.rope_scaled || f.rope_scaled(h, l)) {
    p.linear_factor = h.rope_linear_factor;
    p.yarn_factor = h.yarn_factor;
    p.yarn_orig_ctx = h.yarn_orig_ctx;
    p.yarn_beta_fast = h.yarn_beta_fast;
    p.yarn_beta_slow = h.yarn_beta_slow;
  }
  p.freq_factors = m.rope_freqs();
  return p;
}

// The shape of a step and the Forward whose buffers it uses (`buffers`, the first of them): what every
// launch of a recorded step depends on (positions, ids and caches reach the device through
// begin_step). Two Forwards on one backend never replay each other's steps.
uint64_t step_key(const Step& s, const void* buffers) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the shape's integers
  auto mix = [&](int64_t v) {
    for (int b = 0; b < 8; ++b) h = (h ^ ((static_cast<uint64_t>(v) >> (8 * b)) & 0xff)) * 1099511628211ull;
  };
  mix(static_cast<int64_t>(reinterpret_cast<uintptr_t>(buffers)));
  mix(s.n_rows);
  mix(s.n_seqs);
  for (int64_t i = 0; i < s.n_seqs; ++i) {
    mix(s.seqs[i].row0);
    mix(s.seqs[i].n);
  }
  mix(s.n_out);
  for (int64_t i = 0; i < s.n_out; ++i) mix(s.out_rows[i]);
  return h;
}

}  // namespace

Forward::Forward(const Model& m, Backend& be, const ForwardOptions& opt) : m_(m), be_(be), opt_(opt) {
  const HParams& h = m.hp();
  if (opt_.max_batch < 1) fail("the batch size must be positive");
  const int64_t B = opt_.max_batch, q_width = h.n_head * h.head_dim, kv_width = h.n_head_kv * h.head_dim;
  head_rows_ = std::clamp<int64_t>(kLogitsBufferBytes / (h.n_vocab * int64_t{sizeof(float)}), 1, B);
  x_ = be.alloc(B, h.n_embd);
  h_ = be.alloc(B, h.n_embd);
  q_ = be.alloc(B, q_width);
  k_ = be.alloc(B, kv_width);
  v_ = be.alloc(B, kv_width);
  att_ = be.alloc(B, q_width);
  o_ = be.alloc(B, h.n_embd);
  ffn_out_ = be.alloc(B, h.n_embd);
  head_in_ = be.alloc(head_rows_, h.n_embd);
  logits_ = be.alloc(head_rows_, h.n_vocab);
  if (h.is_moe()) {
    const Family& f = m.family();
    moe_ = std::make_unique<MoeLayer>(be, MoeShape{h.n_embd, h.n_ff_expert, h.n_expert, h.n_expert_used, f.router, f.expert_activation}, B);
    moe_routing_.resize(h.n_layer);
  }
  for (int64_t l = 0; l < h.n_layer; ++l) rope_.push_back(rope_for_layer(m, l));
}

Forward::~Forward() {
  for (Act* a : {&x_, &h_, &q_, &k_, &v_, &att_, &o_, &ffn_out_, &head_in_, &logits_})
    if (a->data) be_.release(*a);
}

void Forward::attention_block(int64_t l, Act x) {
  PhaseScope phase(Phase::Attention);
  const HParams& hp = m_.hp();
  const Family& f = m_.family();
  const LayerWeights& w = m_.layer(l);
  const int64_t n = x.n;
  Act q = q_.first(n), k = k_.first(n), v = v_.first(n), att = att_.first(n);
  const MatmulOut qkv[] = {{&w.q, q, w.q_bias}, {&w.k, k, w.k_bias}, {&w.v, v, w.v_bias}};
  be_.matmul_shared(x, qkv, InputNorm{w.attn_norm, hp.norm_eps});
  if (w.q_norm) {
    be_.rms_norm(q, w.q_norm, hp.norm_eps, hp.head_dim, q);
    be_.rms_norm(k, w.k_norm, hp.norm_eps, hp.head_dim, k);
  }
  AttentionParams p;
  p.n_head = hp.n_head;
  p.n_head_kv = hp.n_head_kv;
  p.head_dim = hp.head_dim;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hp.head_dim)));
  p.window = hp.sliding_window > 0 && f.uses_window && f.uses_window(hp, l) ? hp.sliding_window : 0;
  p.sinks = w.sinks;
  p.rope = &rope_[l];
  be_.attention(l, q, k, v, p, att);
  // Without a norm on the attention output, the projection is added straight into the residual.
  if (!w.post_attn_norm) {
    const MatmulOut o{&w.o, x, w.o_bias, /*accumulate=*/true};
    be_.matmul_shared(att, std::span(&o, 1));
    return;
  }
  Act o = o_.first(n);
  const MatmulOut out{&w.o, o, w.o_bias};
  be_.matmul_shared(att, std::span(&out, 1));
  be_.rms_norm(o, w.post_attn_norm, hp.norm_eps, hp.n_embd, o);
  be_.add(x, o);
}

void Forward::ffn_block(int64_t l, Act x) {
  const HParams& hp = m_.hp();
  const LayerWeights& w = m_.layer(l);
  const int64_t n = x.n;
  Act y = ffn_out_.first(n);
  if (moe_) {
    Act h = h_.first(n);
    be_.rms_norm(x, w.ffn_norm, hp.norm_eps, hp.n_embd, h);
    NextRouter next;  // lets the store read the next layer's likely experts ahead
    if (l + 1 < hp.n_layer && m_.layer(l + 1).router.data) next = {&m_.layer(l + 1).router, m_.layer(l + 1).router_bias, m_.layer(l + 1).ffn_norm, hp.norm_eps};
    // Without a norm on the experts' output, their sum goes straight into the residual.
    const bool into_x = !w.post_ffn_norm;
    moe_->forward(m_.experts(), l, w.router, w.router_bias, h, y, opt_.expert_order, x, next, into_x);
    moe_routing_[l] = moe_->last_routing();
    if (into_x) return;
  } else {
    FfnWeights fw;
    fw.gate = &w.ffn_gate;
    fw.up = &w.ffn_up;
    fw.down = &w.ffn_down;
    fw.act = m_.family().ffn_activation;
    be_.ffn(x, fw, y, InputNorm{w.ffn_norm, hp.norm_eps});
  }
  if (w.post_ffn_norm) be_.rms_norm(y, w.post_ffn_norm, hp.norm_eps, hp.n_embd, y);
  be_.add(x, y);
}

void Forward::check_finite(Act x, const char* what, int64_t layer) {
  check_buf_.resize(static_cast<size_t>(x.n * x.dim));
  be_.to_host(x, check_buf_.data());
  for (size_t j = 0; j < check_buf_.size(); ++j)
    if (!std::isfinite(check_buf_[j])) {
      const int64_t row = static_cast<int64_t>(j) / x.dim;
      if (layer < 0) fail("the {} are not finite (row {} of the batch): the model file holds NaN or infinite weights", what, row);
      fail("the output of layer {} is not finite (row {} of the batch): the model file holds NaN or infinite weights, or the activations overflow", layer, row);
    }
}

void Forward::layers(int64_t n, bool check) {
  const HParams& hp = m_.hp();
  const Family& f = m_.family();
  Act x = x_.first(n);
  be_.embed(m_.token_embd(), x);
  if (f.embed_scale) be_.scale(x, f.embed_scale(hp));
  if (check) check_finite(x, "token embeddings", -1);
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    attention_block(l, x);
    ffn_block(l, x);
    if (opt_.steering)
      for (const SteerParams& p : opt_.steering->after_layer(l)) be_.steer(x, p);
    if (check) check_finite(x, "", l);
    if (!capture_rows_.empty() && !check) capture(l, x);
  }
}

void Forward::capture(int64_t layer, Act x) {
  const int64_t H = m_.hp().n_embd;
  for (const CaptureRow& c : capture_rows_) be_.to_host(x.rows(c.row, 1), c.dst + layer * H);
}

void Forward::head_pass(int64_t n, int64_t first, int64_t m) {
  const HParams& hp = m_.hp();
  Act sel = head_in_.first(m);
  be_.select_output_rows(x_.first(n), first, sel);
  be_.rms_norm(sel, m_.output_norm(), hp.norm_eps, hp.n_embd, sel);
  be_.matmul(m_.output(), sel, logits_.first(m));
}

void Forward::run(std::span<const SeqStep> seqs) {
  PhaseScope phase(Phase::DenseCompute);  // attention and the MoE layer mark their own phases
  const HParams& hp = m_.hp();
  const int64_t V = hp.n_vocab;
  ids_.clear();
  seq_rows_.clear();
  out_rows_.clear();
  out_dst_.clear();
  capture_rows_.clear();
  // Everything is checked before anything changes, so a refused call leaves caches and captures as
  // they were.
  int64_t n = 0;
  for (const SeqStep& s : seqs) {
    if (s.n < 1) fail("internal error: a sequence of {} tokens in a forward call", s.n);
    for (const SeqStep& other : seqs)
      if (&other != &s && (other.kv == s.kv || (s.capture && other.capture == s.capture)))
        fail("internal error: one KV cache or capture appears twice in a forward call");
    if (s.kv->n_past + s.n > s.kv->n_ctx)
      fail("context is full: {} tokens would need {} positions, the limit is {} (raise it with --ctx)", s.n,
           s.kv->n_past + s.n, s.kv->n_ctx);
    for (int64_t i = 0; i < s.n; ++i)
      if (s.ids[i] < 0 || s.ids[i] >= V) fail("token id {} is out of range (the vocabulary has {} tokens)", s.ids[i], V);
    n += s.n;
  }
  if (n < 1 || n > opt_.max_batch) fail("internal error: batch of {} tokens (1..{} allowed)", n, opt_.max_batch);
  for (const SeqStep& s : seqs) {
    const int64_t pos0 = s.kv->n_past, row0 = static_cast<int64_t>(ids_.size());
    ids_.insert(ids_.end(), s.ids, s.ids + s.n);
    seq_rows_.push_back(SeqRows{s.kv->handle(), row0, s.n, pos0});
    if (s.capture) {
      // Room for this call's snapshots first, so the pointers below stay valid during the call.
      ResidualCapture& c = *s.capture;
      const int64_t first = s.capture_all ? 0 : s.n - 1, old = c.snapshots(), L = hp.n_layer, H = hp.n_embd;
      c.layers = L;
      c.hidden = H;
      c.data.resize((old + s.n - first) * L * H);
      for (int64_t i = first; i < s.n; ++i) {
        c.positions.push_back(pos0 + i);
        capture_rows_.push_back(CaptureRow{row0 + i, c.data.data() + (old + i - first) * L * H});
      }
    }
    if (s.logits)
      for (int64_t i = s.all_logits ? 0 : s.n - 1; i < s.n; ++i) {
        out_rows_.push_back(static_cast<int32_t>(row0 + i));
        out_dst_.push_back(s.logits + (s.all_logits ? i * V : 0));
      }
  }
  Step step;
  step.ids = ids_.data();
  step.n_rows = n;
  step.seqs = seq_rows_.data();
  step.n_seqs = static_cast<int64_t>(seq_rows_.size());
  step.out_rows = out_rows_.data();
  step.n_out = static_cast<int64_t>(out_rows_.size());
  be_.begin_step(step);
  // The layers and the head's first pass depend only on the step's shape (its key) and on inputs the
  // backend took in begin_step, so a backend that records (CUDA graphs) replays them for the next
  // step of the same shape: every decode step after the first. Steps that copy residuals out, make
  // several head passes, or route experts on the host are not recorded.
  const bool recordable = capture_rows_.empty() && step.n_out <= head_rows_ && (!moe_ || moe_on_backend_);
  const uint64_t key = step_key(step, x_.data);
  if (!(recordable && be_.replay(key))) {
    if (recordable) be_.begin_recording(key);
    layers(n, false);
    if (step.n_out > 0) head_pass(n, 0, std::min(head_rows_, step.n_out));
    if (recordable) be_.end_recording();
    if (moe_) moe_on_backend_ = moe_->last_on_backend();
  }
  for (const SeqStep& s : seqs) s.kv->n_past += s.n;

  // Only the rows whose logits are wanted go through the head (the largest matrix of small models).
  bool finite = true;
  for (int64_t first = 0; first < step.n_out; first += head_rows_) {
    const int64_t m = std::min(head_rows_, step.n_out - first);
    if (first > 0) head_pass(n, first, m);
    for (int64_t r = 0; r < m; ++r) {
      float* dst = out_dst_[first + r];
      be_.to_host(logits_.rows(r, 1), dst);
      finite = finite && std::all_of(dst, dst + V, [](float v) { return std::isfinite(v); });
    }
  }
  if (!finite) {
    // Locate the fault only now: run the step again (it rewrites the same cache entries with the
    // same values) with every layer's output checked.
    layers(n, true);
    fail("the output head produced non-finite logits: the model file holds NaN or infinite weights");
  }
}

}  // namespace ts
