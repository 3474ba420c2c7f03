#include "moe/moe_layer.h"

namespace ts {
namespace {

Act rows(Act a, int64_t n) { return Act{a.data, n, a.dim}; }

}  // namespace

MoeLayer::MoeLayer(Backend& be, const MoeShape& s, int64_t max_tokens) : be_(be), s_(s) {
  logits_ = be.alloc(max_tokens, s.n_expert);
  xe_ = be.alloc(max_tokens, s.n_embd);
  gate_ = be.alloc(max_tokens, s.n_ff);
  up_ = be.alloc(max_tokens, s.n_ff);
  act_ = be.alloc(max_tokens, s.n_ff);
  down_ = be.alloc(max_tokens, s.n_embd);
  slots_ = be.alloc(max_tokens * s.k, s.n_embd);
  host_logits_.resize(max_tokens * s.n_expert);
}

MoeLayer::~MoeLayer() {
  for (Act* a : {&logits_, &xe_, &gate_, &up_, &act_, &down_, &slots_}) be_.release(*a);
}

void MoeLayer::forward(ExpertStore& store, int64_t layer, const Mat& router, const float* router_bias, Act x,
                       Act out, ExpertOrder order) {
  const int64_t n = x.n, k = s_.k;
  Act logits = rows(logits_, n);
  be_.matmul(router, x, logits);
  be_.to_host(logits, host_logits_.data());
  route(s_.contract, host_logits_.data(), router_bias, n, s_.n_expert, k, layer, routing_);

  // Group the (token, rank) slots by expert so each expert's weights are read once per batch.
  std::vector<std::vector<int32_t>> tokens(s_.n_expert), slots(s_.n_expert);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < k; ++r) {
      const int32_t e = routing_.experts[t * k + r];
      tokens[e].push_back(static_cast<int32_t>(t));
      slots[e].push_back(static_cast<int32_t>(t * k + r));
    }
  for (int64_t i = 0; i < s_.n_expert; ++i) {
    const int64_t e = order == ExpertOrder::Ascending ? i : s_.n_expert - 1 - i;
    const int64_t m = static_cast<int64_t>(tokens[e].size());
    if (m == 0) continue;
    const ExpertView w = store.get(layer, e);
    Act xe = rows(xe_, m), g = rows(gate_, m), u = rows(up_, m), a = rows(act_, m), d = rows(down_, m);
    be_.gather_rows(x, tokens[e].data(), m, xe);
    be_.matmul(w.gate, xe, g);
    be_.matmul(w.up, xe, u);
    if (w.gate_bias) {
      be_.add_bias(g, w.gate_bias);
      be_.add_bias(u, w.up_bias);
    }
    be_.glu(s_.activation, g, u, a);
    be_.matmul(w.down, a, d);
    if (w.down_bias) be_.add_bias(d, w.down_bias);
    be_.scatter_rows(d, slots[e].data(), m, slots_);
  }
  be_.combine_ranked(rows(slots_, n * k), routing_.weights.data(), k, out);
}

}  // namespace ts
