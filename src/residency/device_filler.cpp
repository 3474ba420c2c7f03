// The device filler: every expert is packed once, at load, into pinned host memory in the backend's
// weight layout (Backend::pack), so filling a device slot is one copy on the transfer queue at the
// link's full rate, with no conversion on the way. Two events per slot keep the queues in order
// without a host wait: `filled` (recorded after the copy; the compute queue waits for it before
// the first lease on the slot) and `freed` (recorded on the compute queue when a lease is released,
// after the work that read the slot was issued; the next copy into the slot waits for it).
#include <algorithm>
#include <thread>

#include "residency/slot_filler.h"
#include "residency/stores.h"
#include "util/error.h"

namespace ts {
namespace {

constexpr uint64_t kPartAlign = 256;  // each part of a packed expert starts on this boundary

uint64_t align_up(uint64_t v) { return (v + kPartAlign - 1) / kPartAlign * kPartAlign; }

// Where each part of a packed expert of layer l starts, and the bytes of one packed expert.
struct PackedLayout {
  std::array<uint64_t, kExpertParts> offset{};
  uint64_t bytes = 0;
};
PackedLayout packed_layout(const ExpertSource& src, int64_t l, const Backend& be) {
  PackedLayout pl;
  for (int p = 0; p < kExpertParts; ++p) {
    const ExpertPartInfo& part = src.layer(l).part[p];
    pl.offset[p] = pl.bytes;
    if (!part.bytes) continue;
    const uint64_t bytes = p < kGateBias ? be.packed_bytes(Mat{part.type, nullptr, part.rows, part.cols, part.bytes / part.rows})
                                         : part.bytes;  // biases: f32 as they are
    pl.bytes = align_up(pl.bytes + bytes);
  }
  return pl;
}

class DeviceFiller final : public SlotFiller {
 public:
  DeviceFiller(ExpertStore& from, const ExpertSource& src, Backend& be) : be_(be), layers_(src.n_layer()) {
    try {
      std::vector<int32_t> all(src.n_expert());
      for (int32_t e = 0; e < src.n_expert(); ++e) all[e] = e;
      for (int64_t l = 0; l < src.n_layer(); ++l)
        if (src.is_moe(l)) pack_layer(from, src, l, all);
    } catch (...) {
      release_all();
      throw;
    }
  }
  ~DeviceFiller() override {
    be_.synchronize();  // copies in flight read the pinned memory
    release_all();
  }

  MemKind memory() const override { return MemKind::Device; }
  uint64_t slot_bytes(int64_t layer) const override { return layers_[layer].stride; }

  bool fill(int64_t layer, int32_t e, int32_t slot, uint8_t* at, ReaderPool::Priority, Done, uint64_t& bytes) override {
    Layer& L = layers_[layer];
    SlotEvents& ev = events(L, slot);
    if (ev.freed_recorded) be_.wait_event(Queue::Transfer, ev.freed);  // the previous expert's last reader
    be_.copy_async(at, static_cast<const uint8_t*>(L.host.data) + static_cast<uint64_t>(e) * L.stride, L.stride,
                   Queue::Transfer);
    be_.record_event(ev.filled, Queue::Transfer);
    ev.fill_pending = true;
    bytes += L.stride;
    return true;
  }

  ExpertView view(int64_t layer, int32_t, const uint8_t* at) const override {
    const Layer& L = layers_[layer];
    ExpertView v = L.shape;
    const auto rebase = [&](Mat& m, int p) { m.data = at + L.offset[p]; };
    rebase(v.gate, kGate);
    rebase(v.up, kUp);
    rebase(v.down, kDown);
    const auto bias = [&](const float* b, int p) { return b ? reinterpret_cast<const float*>(at + L.offset[p]) : nullptr; };
    v.gate_bias = bias(L.shape.gate_bias, kGateBias);
    v.up_bias = bias(L.shape.up_bias, kUpBias);
    v.down_bias = bias(L.shape.down_bias, kDownBias);
    return v;
  }

  void before_use(int64_t layer, int32_t slot) override {
    SlotEvents& ev = events(layers_[layer], slot);
    if (!ev.fill_pending) return;
    be_.wait_event(Queue::Compute, ev.filled);
    ev.fill_pending = false;
  }
  void after_use(int64_t layer, int32_t slot) override {
    SlotEvents& ev = events(layers_[layer], slot);
    be_.record_event(ev.freed, Queue::Compute);
    ev.freed_recorded = true;
  }

 private:
  struct SlotEvents {
    EventHandle filled = -1, freed = -1;
    bool fill_pending = false;    // a copy was queued that the compute queue has not waited for yet
    bool freed_recorded = false;  // `freed` marks the slot's latest reader
  };
  struct Layer {
    Buffer host;                                       // pinned: every expert, `stride` bytes apart
    uint64_t stride = 0;                               // one packed expert (a slot)
    std::array<uint64_t, kExpertParts> offset{};       // of each part inside a packed expert
    ExpertView shape;                                  // types, shapes and row strides; data unset
    std::vector<SlotEvents> slots;                     // grown as slots are first filled
  };

  SlotEvents& events(Layer& L, int32_t slot) {
    if (L.slots.size() <= static_cast<size_t>(slot)) L.slots.resize(slot + 1);
    SlotEvents& ev = L.slots[slot];
    if (ev.filled < 0) {
      ev.filled = be_.create_event();
      ev.freed = be_.create_event();
    }
    return ev;
  }

  // Every expert of the layer packed into pinned memory, in parallel (packing is a pass over the
  // bytes at memory speed per thread).
  void pack_layer(ExpertStore& from, const ExpertSource& src, int64_t l, const std::vector<int32_t>& all) {
    std::vector<ExpertView> host(src.n_expert());
    from.request(l, all);
    while (ExpertLease lease = from.next()) host[lease.expert()] = lease.view();  // `from` pins nothing
    Layer& L = layers_[l];
    const PackedLayout pl = packed_layout(src, l, be_);
    L.offset = pl.offset;
    L.stride = pl.bytes;
    L.host = be_.alloc_buffer(checked_mul(L.stride, static_cast<uint64_t>(src.n_expert()), "pinned expert memory"),
                              MemKind::PinnedHost);
    const int n_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
    std::vector<std::thread> pool;
    std::vector<ExpertView> shapes(n_threads);
    for (int t = 0; t < n_threads; ++t)
      pool.emplace_back([&, t] {
        for (int32_t e = t; e < src.n_expert(); e += n_threads) shapes[t] = pack_expert(L, host[e], e);
      });
    for (std::thread& th : pool) th.join();
    L.shape = shapes[0];
  }

  ExpertView pack_expert(const Layer& L, const ExpertView& h, int32_t e) const {
    uint8_t* base = static_cast<uint8_t*>(L.host.data) + static_cast<uint64_t>(e) * L.stride;
    ExpertView v;
    v.gate = be_.pack(h.gate, base + L.offset[kGate]);
    v.up = be_.pack(h.up, base + L.offset[kUp]);
    v.down = be_.pack(h.down, base + L.offset[kDown]);
    const auto bias = [&](const float* b, int64_t n, int p) -> const float* {
      if (!b) return nullptr;
      std::copy(b, b + n, reinterpret_cast<float*>(base + L.offset[p]));
      return b;  // only whether it is present matters for the shape
    };
    v.gate_bias = bias(h.gate_bias, h.gate.rows, kGateBias);
    v.up_bias = bias(h.up_bias, h.up.rows, kUpBias);
    v.down_bias = bias(h.down_bias, h.down.rows, kDownBias);
    return v;
  }

  void release_all() {
    for (Layer& L : layers_) {
      for (SlotEvents& ev : L.slots) {
        if (ev.filled >= 0) be_.destroy_event(ev.filled);
        if (ev.freed >= 0) be_.destroy_event(ev.freed);
      }
      L.slots.clear();
      if (L.host.data) be_.free_buffer(L.host);
    }
  }

  Backend& be_;
  std::vector<Layer> layers_;
};

}  // namespace

uint64_t device_slot_bytes(const ExpertSource& src, int64_t layer, const Backend& be) {
  return packed_layout(src, layer, be).bytes;
}

std::unique_ptr<SlotFiller> make_device_filler(ExpertStore& from, const ExpertSource& src, Backend& be) {
  return std::make_unique<DeviceFiller>(from, src, be);
}

}  // namespace ts
