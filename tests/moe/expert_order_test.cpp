// Experts may be computed in any order (and fetched from anywhere); the output bytes must
// not change, because each token's expert outputs are summed in router rank order. Checked through
// the CLI (--expert-order on the prefill path, where experts are grouped across tokens) and with a
// recording ExpertStore that shows the computation order really changed while the result equals a
// sum taken explicitly in rank order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "model/model.h"
#include "quant/kernels.h"
#include "moe/moe_layer.h"
#include "moe/moe_test_util.h"
#include "runtime/token_file.h"

namespace ts {
namespace {

using test::Fixture;

std::string fixture_name(const testing::TestParamInfo<Fixture>& p) { return test::test_name(p.param.name); }

class ExpertOrderCli : public testing::TestWithParam<Fixture> {};

TEST_P(ExpertOrderCli, RouterAscendingAndDescendingGiveTheSameBytes) {
  const Fixture& f = GetParam();
  test::ScratchDir dir;
  std::vector<std::vector<float>> out;
  for (const char* order : {"router", "ascending", "descending"}) {
    const std::string path = dir.file(std::string(order) + ".f32");
    const test::CliRun r = test::run_cli({"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", path, "--expert-order", order});
    ASSERT_TRUE(r.exited && r.code == 0) << order << ": " << r.err;
    out.push_back(test::read_floats(path));
  }
  EXPECT_TRUE(test::same_bytes(out[0], out[1]));
  EXPECT_TRUE(test::same_bytes(out[0], out[2]));
}

INSTANTIATE_TEST_SUITE_P(Models, ExpertOrderCli, testing::ValuesIn(test::moe_fixtures()), fixture_name);

// Delegates to the model's store and records which experts were asked for and handed out, in order.
class RecordingStore final : public ExpertStore {
 public:
  explicit RecordingStore(ExpertStore& inner) : inner_(inner) {}
  void request(int64_t layer, std::span<const int32_t> experts) override {
    requested.assign(experts.begin(), experts.end());
    inner_.request(layer, experts);
  }
  ExpertLease next() override {
    ExpertLease l = inner_.next();
    if (l) calls.push_back(l.expert());
    return l;
  }
  ExpertStats stats() const override { return inner_.stats(); }
  std::vector<int64_t> calls;
  std::vector<int32_t> requested;

 protected:
  void release(int64_t, int32_t) override {}  // the inner store's leases release themselves

 private:
  ExpertStore& inner_;
};

class ExpertOrderStore : public testing::TestWithParam<Fixture> {
 protected:
  void SetUp() override {
    model_ = Model::load(GetParam().gguf(), *be_);
    const HParams& h = model_->hp();
    shape_ = {h.n_embd, h.n_ff_expert, h.n_expert, h.n_expert_used, model_->family().router, model_->family().expert_activation};
    // The fixture's token embeddings: distinct rows that spread over the experts.
    const std::vector<int32_t> ids = read_token_file(GetParam().tokens());
    x_ = be_->alloc(static_cast<int64_t>(ids.size()), h.n_embd);
    const Mat& table = model_->token_embd();
    for (int64_t i = 0; i < x_.n; ++i)
      quant::dequantize(table.type, static_cast<const uint8_t*>(table.data) + ids[i] * table.row_stride, x_.row(i), table.cols);
  }
  void TearDown() override { be_->release(x_); }

  // One expert's FFN on one token, computed alone.
  std::vector<float> expert_on_token(int64_t layer, int32_t e, int64_t t) {
    ExpertStore& store = model_->experts();
    store.request(layer, std::span<const int32_t>(&e, 1));
    ExpertLease lease = store.next();
    const ExpertView& w = lease.view();
    Act x = be_->alloc(1, shape_.n_embd), g = be_->alloc(1, shape_.n_ff), u = be_->alloc(1, shape_.n_ff);
    Act a = be_->alloc(1, shape_.n_ff), d = be_->alloc(1, shape_.n_embd);
    std::copy(x_.row(t), x_.row(t) + x_.dim, x.data);
    be_->matmul(w.gate, x, g);
    be_->matmul(w.up, x, u);
    if (w.gate_bias) {
      be_->add_bias(g, w.gate_bias);
      be_->add_bias(u, w.up_bias);
    }
    be_->glu(shape_.activation, g, u, a);
    be_->matmul(w.down, a, d);
    if (w.down_bias) be_->add_bias(d, w.down_bias);
    std::vector<float> out(d.data, d.data + d.dim);
    for (Act* p : {&x, &g, &u, &a, &d}) be_->release(*p);
    return out;
  }

  // Token t's expert outputs weighted and summed from 0, taking the ranks in the given order.
  std::vector<float> weighted_sum(int64_t layer, const Routing& r, int64_t t, const std::vector<int64_t>& ranks) {
    std::vector<float> sum(shape_.n_embd, 0.0f);
    for (int64_t k : ranks) {
      const std::vector<float> y = expert_on_token(layer, r.experts[t * r.k + k], t);
      const float w = r.weights[t * r.k + k];
      for (int64_t j = 0; j < shape_.n_embd; ++j) sum[j] += w * y[j];
    }
    return sum;
  }

  std::unique_ptr<Backend> be_ = make_cpu_backend(2);
  std::unique_ptr<Model> model_;
  MoeShape shape_{};
  Act x_;
};

TEST_P(ExpertOrderStore, ReductionFollowsRouterRankNotComputationOrder) {
  for (int64_t layer = 0; layer < model_->hp().n_layer; ++layer) {
    SCOPED_TRACE(fmt::format("layer {}", layer));
    const LayerWeights& lw = model_->layer(layer);
    MoeLayer moe(*be_, shape_, x_.n);
    std::vector<std::vector<float>> outs;
    std::vector<std::vector<int64_t>> calls;
    std::vector<std::vector<int32_t>> requested;
    for (ExpertOrder order : {ExpertOrder::Router, ExpertOrder::Ascending, ExpertOrder::Descending}) {
      RecordingStore store(model_->experts());
      Act out = be_->alloc(x_.n, shape_.n_embd);
      moe.forward(store, layer, lw.router, lw.router_bias, x_, out, order);
      outs.emplace_back(out.data, out.data + out.n * out.dim);
      calls.push_back(store.calls);
      requested.push_back(store.requested);
      be_->release(out);
    }
    const Routing& r = moe.last_routing();

    // The store is asked for each routed expert once, in router rank order of first appearance by
    // default; the resident store hands them out in the order asked, so the three runs computed the
    // experts in three different orders.
    std::vector<int32_t> first_seen;
    for (int32_t e : r.experts)
      if (std::find(first_seen.begin(), first_seen.end(), e) == first_seen.end()) first_seen.push_back(e);
    const std::set<int64_t> routed(r.experts.begin(), r.experts.end());
    ASSERT_GE(routed.size(), 2u) << "all tokens went to one expert: the order cannot differ";
    EXPECT_EQ(requested[0], first_seen);
    EXPECT_EQ(calls[0], std::vector<int64_t>(first_seen.begin(), first_seen.end()));
    EXPECT_EQ(calls[1], std::vector<int64_t>(routed.begin(), routed.end()));
    EXPECT_EQ(calls[2], std::vector<int64_t>(routed.rbegin(), routed.rend()));
    EXPECT_TRUE(test::same_bytes(outs[0], outs[1]));
    EXPECT_TRUE(test::same_bytes(outs[0], outs[2]));

    // Each token's output is exactly the rank-ordered weighted sum of its experts' outputs. The same
    // sum in expert-index order (the computation order) is kept to show the check can tell them
    // apart: with k >= 3 it must differ on some token (with k = 2, a + b == b + a bitwise).
    int64_t mismatched = 0, order_sensitive = 0;
    for (int64_t t = 0; t < x_.n; ++t) {
      std::vector<int64_t> ranks(r.k);
      for (int64_t k = 0; k < r.k; ++k) ranks[k] = k;
      std::vector<float> want = weighted_sum(layer, r, t, ranks);
      std::sort(ranks.begin(), ranks.end(), [&](int64_t a, int64_t b) { return r.experts[t * r.k + a] < r.experts[t * r.k + b]; });
      order_sensitive += !test::same_bytes(want, weighted_sum(layer, r, t, ranks));
      mismatched += std::memcmp(want.data(), outs[0].data() + t * shape_.n_embd, want.size() * sizeof(float)) != 0;
    }
    EXPECT_EQ(mismatched, 0) << "tokens whose output is not the rank-ordered sum";
    if (r.k >= 3) {
      EXPECT_GT(order_sensitive, 0) << "no token where the summation order shows";
    }
  }
}

// One token repeated 300 times: each of its k experts is chosen by 300 (token, rank) pairs, more than
// a byte counts, and is still asked for exactly once (a store's planner refuses a repeated expert).
TEST_P(ExpertOrderStore, AnExpertChosenByHundredsOfTokensIsAskedForOnce) {
  const int64_t n = 300;
  Act x = be_->alloc(n, shape_.n_embd), out = be_->alloc(n, shape_.n_embd);
  for (int64_t t = 0; t < n; ++t) std::copy(x_.row(0), x_.row(0) + x_.dim, x.row(t));
  MoeLayer moe(*be_, shape_, n);
  RecordingStore store(model_->experts());
  const LayerWeights& lw = model_->layer(0);
  moe.forward(store, 0, lw.router, lw.router_bias, x, out, ExpertOrder::Router);
  const Routing& r = moe.last_routing();
  const std::vector<int32_t> first(r.experts.begin(), r.experts.begin() + shape_.k);
  EXPECT_EQ(store.requested, first) << "the token's k experts, once each, in rank order";
  be_->release(x);
  be_->release(out);
}

INSTANTIATE_TEST_SUITE_P(Models, ExpertOrderStore, testing::ValuesIn(test::moe_fixtures()), fixture_name);

}  // namespace
}  // namespace ts
