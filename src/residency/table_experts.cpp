// Mapped, resident and device experts: every expert is in memory for the whole run, so a layer
// call's experts are ready at once, in the order asked, and a lease pins nothing.
#include <vector>

#include "residency/expert_files.h"
#include "residency/stores.h"
#include "util/error.h"

namespace ts {
namespace {

class TableExperts final : public ExpertStore {
 public:
  TableExperts(std::vector<std::vector<ExpertView>> views, Backend* be, std::vector<Buffer> owned)
      : views_(std::move(views)), be_(be), owned_(std::move(owned)) {}
  ~TableExperts() override {
    for (Buffer& b : owned_) be_->free_buffer(b);
  }

  void request(int64_t layer, std::span<const int32_t> experts) override {
    layer_ = layer;
    asked_.assign(experts.begin(), experts.end());
    next_ = 0;
    stats_.requests += static_cast<int64_t>(experts.size());
    stats_.hits += static_cast<int64_t>(experts.size());
  }
  ExpertLease next() override {
    if (next_ >= asked_.size()) return {};
    const int32_t e = asked_[next_++];
    return make_lease(layer_, e, -1, views_[layer_][e]);
  }
  ExpertStats stats() const override { return stats_; }
  bool resident() const override { return true; }

 protected:
  void release(int64_t, int32_t) override {}

 private:
  std::vector<std::vector<ExpertView>> views_;  // [layer][expert]
  Backend* be_;
  std::vector<Buffer> owned_;
  int64_t layer_ = -1;
  std::vector<int32_t> asked_;
  size_t next_ = 0;
  ExpertStats stats_;
};

}  // namespace

std::unique_ptr<ExpertStore> make_mapped_experts(std::shared_ptr<const ExpertSource> src,
                                                 const std::vector<const uint8_t*>& maps) {
  std::vector<std::vector<ExpertView>> views(src->n_layer());
  for (int64_t l = 0; l < src->n_layer(); ++l)
    if (src->is_moe(l))
      for (int32_t e = 0; e < src->n_expert(); ++e) views[l].push_back(src->mapped_view(l, e, maps));
  return std::make_unique<TableExperts>(std::move(views), nullptr, std::vector<Buffer>{});
}

std::unique_ptr<ExpertStore> make_resident_experts(std::shared_ptr<const ExpertSource> src, Backend& be,
                                                   const ReadOptions& o) {
  const bool direct = o.direct_io;
  std::vector<Buffer> owned;
  std::vector<std::vector<ExpertView>> views(src->n_layer());
  try {
    std::mutex mu;  // declared before the pool: its callbacks use these until it is destroyed
    std::string first_error;
    ExpertFiles files(src->files(), direct);
    ReaderPool pool(o.threads, o.chunk_bytes, o.read);
    std::vector<ReadExtent> ext;
    for (int64_t l = 0; l < src->n_layer(); ++l) {
      if (!src->is_moe(l)) continue;
      const uint64_t stride = src->slot_bytes(l, direct);
      owned.push_back(be.alloc_buffer(checked_mul(stride, static_cast<uint64_t>(src->n_expert()), "expert memory"), MemKind::Host));
      uint8_t* base = static_cast<uint8_t*>(owned.back().data);
      for (int32_t e = 0; e < src->n_expert(); ++e) {
        uint8_t* slot = base + static_cast<uint64_t>(e) * stride;
        ext.clear();
        src->extents(l, e, direct, files.fds(), slot, ext);
        pool.submit(ext, [&, l, e](const std::string& err) {
          std::lock_guard<std::mutex> lk(mu);
          if (!err.empty() && first_error.empty()) first_error = fmt::format("cannot read {}: {}", src->describe(l, e), err);
        });
        views[l].push_back(src->view(l, e, slot, direct));
      }
    }
    pool.wait_idle();
    if (!first_error.empty()) fail("{}", first_error);
  } catch (...) {
    for (Buffer& b : owned) be.free_buffer(b);
    throw;
  }
  return std::make_unique<TableExperts>(std::move(views), &be, std::move(owned));
}

std::unique_ptr<ExpertStore> make_device_experts(ExpertStore& from, const ExpertSource& src, Backend& be) {
  const auto bias = [&](const float* b, int64_t n) {
    return b ? be.upload_f32(std::vector<float>(b, b + n)) : nullptr;
  };
  std::vector<std::vector<ExpertView>> views(src.n_layer());
  std::vector<int32_t> all(src.n_expert());
  for (int32_t e = 0; e < src.n_expert(); ++e) all[e] = e;
  for (int64_t l = 0; l < src.n_layer(); ++l) {
    if (!src.is_moe(l)) continue;
    views[l].resize(src.n_expert());
    from.request(l, all);
    while (ExpertLease lease = from.next()) {
      const ExpertView& h = lease.view();
      ExpertView& d = views[l][lease.expert()];
      d.gate = be.upload(h.gate);
      d.up = be.upload(h.up);
      d.down = be.upload(h.down);
      d.gate_bias = bias(h.gate_bias, h.gate.rows);
      d.up_bias = bias(h.up_bias, h.up.rows);
      d.down_bias = bias(h.down_bias, h.down.rows);
    }
  }
  // The uploads belong to the backend (freed with it), so the store owns no buffers.
  return std::make_unique<TableExperts>(std::move(views), &be, std::vector<Buffer>{});
}

}  // namespace ts
