#include "moe/moe_layer.h"

namespace ts {
MoeLayer::MoeLayer(Backend& be, const MoeShape& s, int64_t max_tokens) : be_(be), s_(s) {
  logits_ = be.alloc(max_tokens, s.n_expert);
  xe_ = be.alloc(max_tokens, s.n_embd);
  down_ = be.alloc(max_tokens, s.n_embd);
  slots_ = be.alloc(max_tokens * s.k, s.n_embd);
  host_logits_.resize(max_tokens * s.n_expert);
}

MoeLayer::~MoeLayer() {
  for (Act* a : {&logits_, &xe_, &down_, &slots_}) be_.release(*a);
}

void MoeLayer::forward(ExpertStore& store, int64_t layer, const Mat& router, const float* router_bias, Act x,
                       Act out, ExpertOrder order) {
  const int64_t n = x.n, k = s_.k;
  Act logits = logits_.first(n);
  be_.matmul(router, x, logits);
  be_.to_host(logits, host_logits_.data());
  route(s_.contract, host_logits_.data(), router_bias, n, s_.n_expert, k, layer, routing_);

  // Group the (token, rank) slots by expert so each expert's weights are read once per batch.
  // The per-expert lists are members so their capacity is reused from call to call.
  tokens_.resize(s_.n_expert);
  slots_of_.resize(s_.n_expert);
  for (int64_t e = 0; e < s_.n_expert; ++e) {
    tokens_[e].clear();
    slots_of_[e].clear();
  }
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < k; ++r) {
      const int32_t e = routing_.experts[t * k + r];
      tokens_[e].push_back(static_cast<int32_t>(t));
      slots_of_[e].push_back(static_cast<int32_t>(t * k + r));
    }
  for (int64_t i = 0; i < s_.n_expert; ++i) {
    const int64_t e = order == ExpertOrder::Ascending ? i : s_.n_expert - 1 - i;
    const int64_t m = static_cast<int64_t>(tokens_[e].size());
    if (m == 0) continue;
    const ExpertView w = store.get(layer, e);
    Act xe = xe_.first(m), d = down_.first(m);
    be_.gather_rows(x, tokens_[e].data(), m, xe);
    FfnWeights fw;
    fw.gate = &w.gate;
    fw.up = &w.up;
    fw.down = &w.down;
    fw.gate_bias = w.gate_bias;
    fw.up_bias = w.up_bias;
    fw.down_bias = w.down_bias;
    fw.act = s_.activation;
    be_.ffn(xe, fw, d);
    be_.scatter_rows(d, slots_of_[e].data(), m, slots_);
  }
  be_.combine_ranked(slots_.first(n * k), routing_.weights.data(), k, out);
}

}  // namespace ts
