#include "moe/moe_layer.h"

#include <algorithm>
#include <utility>

#include "moe/router_recorder.h"
#include "util/error.h"
#include "util/phase_clock.h"

namespace ts {
MoeLayer::MoeLayer(Backend& be, const MoeShape& s, int64_t max_tokens) : be_(be), s_(s) {
  logits_ = be.alloc(max_tokens, s.n_expert);
  xe_ = be.alloc(max_tokens, s.n_embd);
  down_ = be.alloc(max_tokens, s.n_embd);
  slots_ = be.alloc(max_tokens * s.k, s.n_embd);
  predict_x_ = be.alloc(max_tokens, s.n_embd);
  // Steps of a few rows may run their experts side by side (compute_together).
  const int64_t together = std::min<int64_t>(max_tokens, kTogetherTokens) * s.k;
  xe_all_ = be.alloc(together, s.n_embd);
  down_all_ = be.alloc(together, s.n_embd);
  host_logits_.resize(max_tokens * s.n_expert);
}

MoeLayer::~MoeLayer() {
  for (Act* a : {&logits_, &xe_, &down_, &slots_, &predict_x_, &xe_all_, &down_all_}) be_.release(*a);
}

void MoeLayer::route_tokens(const Mat& router, const float* bias, Act x, int64_t layer, Routing& out) {
  Act logits = logits_.first(x.n);
  be_.matmul(router, x, logits);
  be_.to_host(logits, host_logits_.data());
  route(s_.contract, host_logits_.data(), bias, x.n, s_.n_expert, s_.k, layer, out);
}

// The distinct experts of a routing, in the order of their first appearance in (token, rank) order:
// the experts the batch's first token ranks highest come first.
void MoeLayer::distinct_experts(const Routing& r, ExpertOrder order, std::vector<int32_t>& out) {
  out.clear();
  seen_.assign(s_.n_expert, 0);
  for (int32_t e : r.experts)
    if (!seen_[e]) {  // a flag, not a count: an expert may be chosen by more pairs than a byte counts
      seen_[e] = 1;
      out.push_back(e);
    }
  if (order == ExpertOrder::Ascending) std::sort(out.begin(), out.end());
  if (order == ExpertOrder::Descending) std::sort(out.begin(), out.end(), std::greater<>());
}

void MoeLayer::compute_expert(const ExpertLease& lease, Act x) {
  const int32_t e = lease.expert();
  const ExpertView& w = lease.view();
  const int64_t m = static_cast<int64_t>(tokens_[e].size());
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

// The leases in leases_ (a resident store's, all ready at once) as one backend call, when the backend
// has a faster way than one FFN at a time (ffn_many): each expert's rows are gathered into its own
// block of xe_all_ and its output scattered from down_all_, so the bytes are compute_expert's.
bool MoeLayer::compute_together(Act x) {
  if (x.n > kTogetherTokens) return false;
  jobs_.clear();
  int64_t row = 0;
  for (const ExpertLease& lease : leases_) {
    const int32_t e = lease.expert();
    const ExpertView& w = lease.view();
    const int64_t m = static_cast<int64_t>(tokens_[e].size());
    FfnJob j{xe_all_.rows(row, m), FfnWeights{}, down_all_.rows(row, m)};
    j.w.gate = &w.gate;
    j.w.up = &w.up;
    j.w.down = &w.down;
    j.w.gate_bias = w.gate_bias;
    j.w.up_bias = w.up_bias;
    j.w.down_bias = w.down_bias;
    j.w.act = s_.activation;
    be_.gather_rows(x, tokens_[e].data(), m, j.x);
    jobs_.push_back(j);
    row += m;
  }
  if (!be_.ffn_many(jobs_)) return false;
  for (size_t i = 0; i < leases_.size(); ++i) {
    const int32_t e = leases_[i].expert();
    be_.scatter_rows(jobs_[i].out, slots_of_[e].data(), jobs_[i].out.n, slots_);
  }
  return true;
}

// Every expert of the layer, taken once through the store's leases. Only for resident stores, whose
// leases pin nothing and whose experts stay at the same address for the store's lifetime, so the
// table stays valid after the leases are released.
const std::vector<ExpertView>& MoeLayer::layer_table(ExpertStore& store, int64_t layer) {
  if (table_store_ != &store) tables_.clear();  // the tables belong to one store
  table_store_ = &store;
  if (tables_.size() <= static_cast<size_t>(layer)) tables_.resize(layer + 1);
  std::vector<ExpertView>& table = tables_[layer];
  if (table.empty()) {
    std::vector<int32_t> all(s_.n_expert);
    for (int32_t e = 0; e < s_.n_expert; ++e) all[e] = e;
    store.request(layer, all);
    table.resize(s_.n_expert);
    while (ExpertLease lease = store.next()) table[lease.expert()] = lease.view();
  }
  return table;
}

void MoeLayer::request_experts(ExpertStore& store, int64_t layer, ExpertOrder order, Act residual, const NextRouter& next) {
  distinct_experts(routing_, order, experts_);
  store.request(layer, experts_);
  // Predict the next layer's experts from this layer's input and let the store read them while
  // this layer computes. A wrong guess costs a read, never a wrong result: the next layer routes
  // for real and asks for what it needs.
  if (!next.router || !residual.data || !store.wants_prefetch()) return;
  Act px = predict_x_.first(residual.n);
  be_.rms_norm(residual, next.norm, next.norm_eps, s_.n_embd, px);
  route_tokens(*next.router, next.bias, px, layer + 1, predicted_);
  distinct_experts(predicted_, ExpertOrder::Router, predicted_experts_);
  store.prefetch(layer + 1, predicted_experts_);
}

// Experts that move (a slot cache) on a backend that runs routed experts as one operation: the
// backend routes on its device and hands the choices to the host, which plans the slots; then the
// backend runs the experts whose slots are ready, in waves of at most the store's lease limit (a
// wave's leases are released once its work is issued, which frees their slots for the next wave),
// and sums every (token, rank) pair in rank order at the end. The bytes are those of the resident
// path: the same routing, products and sum, only the weights' addresses differ.
void MoeLayer::forward_in_waves(ExpertStore& store, int64_t layer, const Mat& router, const float* router_bias, Act x,
                                Act out, ExpertOrder order, Act residual, const NextRouter& next, bool add_to_residual) {
  RoutedExperts op{layer, s_.contract, s_.activation, s_.k, &router, router_bias, {}, add_to_residual};
  {
    PhaseScope phase(Phase::Router);
    // The prediction of the next layer's experts (see request_experts) routes on the device too, its
    // router weights being there; it goes first, as the backend keeps one routing call's state.
    predicted_experts_.clear();
    if (next.router && residual.data && store.wants_prefetch()) {
      Act px = predict_x_.first(x.n);
      be_.rms_norm(residual, next.norm, next.norm_eps, s_.n_embd, px);
      const RoutedExperts predict{layer + 1, s_.contract, s_.activation, s_.k, next.router, next.bias, {}};
      predicted_ = Routing{x.n, s_.k, std::vector<int32_t>(x.n * s_.k), {}};
      be_.route_experts(predict, px, predicted_.experts.data());
      distinct_experts(predicted_, ExpertOrder::Router, predicted_experts_);
    }
    routing_ = Routing{x.n, s_.k, std::vector<int32_t>(x.n * s_.k), {}};  // the weights stay on the device
    be_.route_experts(op, x, routing_.experts.data());
    if (RouterRecorder* rec = RouterRecorder::active()) rec->record(layer, routing_);
    store.offer_host(s_.activation, x.n);  // misses the backend's host threads may compute in place
    request_experts(store, layer, order, {}, {});
    if (!predicted_experts_.empty()) store.prefetch(layer + 1, predicted_experts_);  // after this layer's own
  }
  PhaseScope phase(Phase::ExpertCompute);
  wave_.assign(s_.n_expert, ExpertView{});
  const size_t limit = static_cast<size_t>(std::max<int32_t>(1, store.lease_limit(layer)));
  const auto run_wave = [&] {
    op.experts = wave_;
    be_.run_experts(op, x);
    for (const ExpertLease& l : leases_) wave_[l.expert()] = ExpertView{};
    leases_.clear();  // released: their slots may be refilled once the wave's work has run
  };
  while (ExpertLease lease = store.next()) {
    wave_[lease.expert()] = lease.view();
    leases_.push_back(std::move(lease));
    if (leases_.size() >= limit) run_wave();
  }
  if (!leases_.empty()) run_wave();
  op.experts = {};
  be_.combine_experts(op, x, add_to_residual ? residual : out);
}

void MoeLayer::forward(ExpertStore& store, int64_t layer, const Mat& router, const float* router_bias, Act x, Act out,
                       ExpertOrder order, Act residual, const NextRouter& next, bool add_to_residual) {
  if (add_to_residual && residual.n != x.n)
    fail("internal error: the MoE layer adds into a residual of {} rows for {} tokens", residual.n, x.n);
  const int64_t n = x.n, k = s_.k;
  // Experts that stay put can be run by the backend as one operation (on a GPU: routing, expert
  // FFNs and the combine without a host round trip); when it declines, the loop below defines it.
  // A router recording needs the routing on the host: such a backend then routes in waves, whose
  // choices come back to the host.
  on_backend_ = false;
  if (be_.offers_routed_experts()) {
    if (store.resident() && !RouterRecorder::active()) {
      const RoutedExperts op{layer, s_.contract, s_.activation, k, &router, router_bias, layer_table(store, layer), add_to_residual};
      on_backend_ = be_.routed_experts(op, x, add_to_residual ? residual : out);
      if (on_backend_) {
        routing_ = Routing{};
        return;
      }
    } else {
      // Experts that move, or a recording that needs the choices on the host: the backend still
      // routes (its router weights are in its memory), and the choices come back.
      forward_in_waves(store, layer, router, router_bias, x, out, order, residual, next, add_to_residual);
      return;
    }
  }
  {
    PhaseScope phase(Phase::Router);
    route_tokens(router, router_bias, x, layer, routing_);
    if (RouterRecorder* rec = RouterRecorder::active()) rec->record(layer, routing_);
    request_experts(store, layer, order, residual, next);
  }

  PhaseScope phase(Phase::ExpertCompute);
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
  if (store.resident()) {
    // A resident store's leases pin nothing and are all ready: the backend may run them together.
    leases_.clear();
    while (ExpertLease lease = store.next()) leases_.push_back(std::move(lease));
    if (!compute_together(x))
      for (const ExpertLease& lease : leases_) compute_expert(lease, x);
    leases_.clear();
  } else {
    // Experts come in the order they are ready; each lease is released before asking for the next,
    // so even a cache of one slot per layer makes progress.
    while (ExpertLease lease = store.next()) compute_expert(lease, x);
  }
  be_.combine_ranked(slots_.first(n * k), routing_.weights.data(), k, out);
  if (add_to_residual) be_.add(residual, out);
}

}  // namespace ts
