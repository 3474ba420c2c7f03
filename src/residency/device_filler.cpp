// The device filler: slots in device memory, filled on the transfer queue from one of two feeds:
//  - a pinned copy of every expert, packed once at load into the backend's weight layout
//    (Backend::pack; the host holds the experts' bytes): a miss is one copy at the link's full rate;
//  - the expert files (experts larger than the host's memory too): a miss is read by the reader pool
//    into a pinned staging area per slot, copied as read into one device staging buffer, and
//    repacked from there into its slot by the device (Backend::pack_async). Packing on a host thread
//    took about 4 ms per 13 MB expert, 20 times the copy; the queue keeps each expert's copy and
//    repack in order, so one staging buffer serves every slot.
// Two events per slot keep the queues in order without a host wait: `filled` (recorded after the
// copy; the compute queue waits for it before the slot's first lease) and `freed` (recorded on the
// compute queue when a lease is released, after the work that read the slot was issued; the next
// copy into the slot waits for it).
#include <algorithm>
#include <thread>

#include "residency/expert_files.h"
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
  // from: the pinned-copy feed (every expert of `from` packed now); null: the file feed.
  DeviceFiller(ExpertStore* from, std::shared_ptr<const ExpertSource> src, Backend& be, const ReadOptions& ro)
      : src_(std::move(src)), be_(be), direct_(ro.direct_io), layers_(src_->n_layer()) {
    try {
      std::vector<int32_t> all(src_->n_expert());
      for (int32_t e = 0; e < src_->n_expert(); ++e) all[e] = e;
      for (int64_t l = 0; l < src_->n_layer(); ++l) {
        if (!src_->is_moe(l)) continue;
        const PackedLayout pl = packed_layout(*src_, l, be_);
        layers_[l].offset = pl.offset;
        layers_[l].stride = pl.bytes;
        layers_[l].shape = shape(l);
        if (from) pack_layer(*from, l, all);
      }
      if (!from) {
        files_ = std::make_unique<ExpertFiles>(src_->files(), direct_);
        pool_ = std::make_unique<ReaderPool>(ro.threads, ro.chunk_bytes, ro.read);
        uint64_t raw = 0;
        for (int64_t l = 0; l < src_->n_layer(); ++l)
          if (src_->is_moe(l)) raw = std::max(raw, src_->slot_bytes(l, direct_));
        raw_dev_ = be_.alloc_buffer(raw, MemKind::Device);
      }
    } catch (...) {
      release_all();
      throw;
    }
  }
  ~DeviceFiller() override {
    pool_.reset();      // reads in flight write the staging areas
    be_.synchronize();  // copies in flight read the pinned memory
    release_all();
  }

  MemKind memory() const override { return MemKind::Device; }
  uint64_t slot_bytes(int64_t layer) const override { return layers_[layer].stride; }

  bool fill(int64_t layer, int32_t e, int32_t slot, uint8_t* at, ReaderPool::Priority priority, Done done,
            uint64_t& bytes) override {
    Layer& L = layers_[layer];
    if (!pool_) {  // pinned copy: the expert is there already
      copy(L, slot, at, static_cast<const uint8_t*>(L.host.data) + static_cast<uint64_t>(e) * L.stride);
      bytes += L.stride;
      return true;
    }
    Staging& st = staging(layer, slot);
    SlotEvents& ev = events(L, slot);
    if (ev.copied_once) be_.host_wait(ev.filled);  // the staging's last copy has left it
    st.expert = e;
    extents_.clear();
    src_->extents(layer, e, direct_, files_->fds(), static_cast<uint8_t*>(st.raw.data), extents_);
    for (const ReadExtent& x : extents_) bytes += x.bytes;
    st.job = pool_->submit(extents_, std::move(done), priority);
    return false;
  }
  ReaderPool::Cancel cancel(int64_t layer, int32_t slot, uint64_t& unread) override {
    if (!pool_) return ReaderPool::Cancel::TooLate;  // a queued copy
    return pool_->cancel(staging(layer, slot).job, unread);
  }

  // The expert as read goes to the device staging buffer, then each part into the slot in the
  // backend's layout (the biases as they are), after the slot's previous readers.
  void landed(int64_t layer, int32_t slot, uint8_t* at) override {
    Layer& L = layers_[layer];
    const Staging& st = staging(layer, slot);
    SlotEvents& ev = events(L, slot);
    auto* raw = static_cast<uint8_t*>(raw_dev_.data);
    be_.copy_async(raw, st.raw.data, src_->slot_bytes(layer, direct_), Queue::Transfer);
    if (ev.freed_recorded) be_.wait_event(Queue::Transfer, ev.freed);
    const ExpertView v = src_->view(layer, st.expert, raw, direct_);
    be_.pack_async(v.gate, at + L.offset[kGate], Queue::Transfer);
    be_.pack_async(v.up, at + L.offset[kUp], Queue::Transfer);
    be_.pack_async(v.down, at + L.offset[kDown], Queue::Transfer);
    const auto bias = [&](const float* b, int64_t n, int p) {
      if (b) be_.copy_async(at + L.offset[p], b, static_cast<size_t>(n) * sizeof(float), Queue::Transfer);
    };
    bias(v.gate_bias, v.gate.rows, kGateBias);
    bias(v.up_bias, v.up.rows, kUpBias);
    bias(v.down_bias, v.down.rows, kDownBias);
    filled(ev);
  }

  ExpertView view(int64_t layer, int32_t, const uint8_t* at) const override {
    const Layer& L = layers_[layer];
    ExpertView v = L.shape;
    for (Mat* m : {&v.gate, &v.up, &v.down}) m->data = at + reinterpret_cast<uintptr_t>(m->data);
    for (const float** b : {&v.gate_bias, &v.up_bias, &v.down_bias})
      if (*b) *b = reinterpret_cast<const float*>(at + reinterpret_cast<uintptr_t>(*b));
    return v;
  }

  bool host_view(int64_t layer, int32_t e, ExpertView& v) const override {
    const Layer& L = layers_[layer];
    if (pool_ || !L.host.data) return false;  // the file feed holds no expert on the host
    v = view(layer, e, static_cast<const uint8_t*>(L.host.data) + static_cast<uint64_t>(e) * L.stride);
    v.on_host = true;
    return true;
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
    bool copied_once = false;     // `filled` has been recorded
  };
  struct Staging {
    Buffer raw;          // pinned: the expert as read (file layout)
    int32_t expert = 0;  // which one
    ReaderPool::JobRef job;  // its read
  };
  struct Layer {
    Buffer host;                                  // pinned copy feed: every expert, `stride` bytes apart
    uint64_t stride = 0;                          // one packed expert (a slot)
    std::array<uint64_t, kExpertParts> offset{};  // of each part inside a packed expert
    ExpertView shape;                             // types, shapes, row strides; data = offsets
    std::vector<SlotEvents> slots;                // grown as slots are first filled
    std::vector<std::unique_ptr<Staging>> staging;  // file feed, per slot, made at its first fill
  };

  // Queues the copy of a packed expert into a device slot, after the slot's previous readers.
  void copy(Layer& L, int32_t slot, uint8_t* at, const uint8_t* packed) {
    SlotEvents& ev = events(L, slot);
    if (ev.freed_recorded) be_.wait_event(Queue::Transfer, ev.freed);
    be_.copy_async(at, packed, L.stride, Queue::Transfer);
    filled(ev);
  }
  void filled(SlotEvents& ev) {
    be_.record_event(ev.filled, Queue::Transfer);
    ev.fill_pending = ev.copied_once = true;
  }

  SlotEvents& events(Layer& L, int32_t slot) {
    if (L.slots.size() <= static_cast<size_t>(slot)) L.slots.resize(slot + 1);
    SlotEvents& ev = L.slots[slot];
    if (ev.filled < 0) {
      ev.filled = be_.create_event();
      ev.freed = be_.create_event();
    }
    return ev;
  }

  Staging& staging(int64_t layer, int32_t slot) {
    Layer& L = layers_[layer];
    if (L.staging.size() <= static_cast<size_t>(slot)) L.staging.resize(slot + 1);
    std::unique_ptr<Staging>& st = L.staging[slot];
    if (!st) {
      st = std::make_unique<Staging>();
      st->raw = be_.alloc_buffer(src_->slot_bytes(layer, direct_), MemKind::PinnedHost);
    }
    return *st;
  }

  // The layer's packed expert with each part's offset in place of its address (view() rebases it).
  ExpertView shape(int64_t l) const {
    const ExpertLayerFiles& f = src_->layer(l);
    const Layer& L = layers_[l];
    ExpertView v;
    Mat* mats[3] = {&v.gate, &v.up, &v.down};
    for (int p = 0; p < 3; ++p) {
      const ExpertPartInfo& part = f.part[p];
      const Mat host{part.type, nullptr, part.rows, part.cols, part.bytes / part.rows};
      *mats[p] = Mat{part.type, reinterpret_cast<const void*>(static_cast<uintptr_t>(L.offset[p])), part.rows, part.cols,
                     be_.packed_bytes(host) / static_cast<size_t>(part.rows)};
    }
    const float** biases[3] = {&v.gate_bias, &v.up_bias, &v.down_bias};
    for (int p = 0; p < 3; ++p)
      if (f.part[kGateBias + p].bytes) *biases[p] = reinterpret_cast<const float*>(static_cast<uintptr_t>(L.offset[kGateBias + p]));
    return v;
  }

  // Every expert of layer l, taken through `from`'s leases, packed into pinned memory, in parallel
  // (packing is a pass over the bytes at memory speed per thread).
  void pack_layer(ExpertStore& from, int64_t l, const std::vector<int32_t>& all) {
    std::vector<ExpertView> host(src_->n_expert());
    from.request(l, all);
    while (ExpertLease lease = from.next()) host[lease.expert()] = lease.view();  // `from` pins nothing
    Layer& L = layers_[l];
    L.host = be_.alloc_buffer(checked_mul(L.stride, static_cast<uint64_t>(src_->n_expert()), "pinned expert memory"),
                              MemKind::PinnedHost);
    const int n_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
    std::vector<std::thread> pool;
    for (int t = 0; t < n_threads; ++t)
      pool.emplace_back([&, t] {
        for (int32_t e = t; e < src_->n_expert(); e += n_threads)
          pack_expert(L, host[e], static_cast<uint8_t*>(L.host.data) + static_cast<uint64_t>(e) * L.stride);
      });
    for (std::thread& th : pool) th.join();
  }

  void pack_expert(const Layer& L, const ExpertView& h, uint8_t* base) const {
    be_.pack(h.gate, base + L.offset[kGate]);
    be_.pack(h.up, base + L.offset[kUp]);
    be_.pack(h.down, base + L.offset[kDown]);
    const auto bias = [&](const float* b, int64_t n, int p) {
      if (b) std::copy(b, b + n, reinterpret_cast<float*>(base + L.offset[p]));
    };
    bias(h.gate_bias, h.gate.rows, kGateBias);
    bias(h.up_bias, h.up.rows, kUpBias);
    bias(h.down_bias, h.down.rows, kDownBias);
  }

  void release_all() {
    for (Layer& L : layers_) {
      for (SlotEvents& ev : L.slots) {
        if (ev.filled >= 0) be_.destroy_event(ev.filled);
        if (ev.freed >= 0) be_.destroy_event(ev.freed);
      }
      L.slots.clear();
      for (std::unique_ptr<Staging>& st : L.staging)
        if (st && st->raw.data) be_.free_buffer(st->raw);
      L.staging.clear();
      if (L.host.data) be_.free_buffer(L.host);
    }
    if (raw_dev_.data) be_.free_buffer(raw_dev_);
  }

  std::shared_ptr<const ExpertSource> src_;
  Backend& be_;
  bool direct_;
  std::vector<Layer> layers_;
  std::unique_ptr<ExpertFiles> files_;  // file feed
  Buffer raw_dev_;                      // file feed: the expert being repacked, as read
  std::vector<ReadExtent> extents_;
  std::unique_ptr<ReaderPool> pool_;    // file feed; reset first (see the destructor)
};

}  // namespace

uint64_t device_slot_bytes(const ExpertSource& src, int64_t layer, const Backend& be) {
  return packed_layout(src, layer, be).bytes;
}

std::unique_ptr<SlotFiller> make_device_filler(ExpertStore& from, std::shared_ptr<const ExpertSource> src, Backend& be) {
  return std::make_unique<DeviceFiller>(&from, std::move(src), be, ReadOptions{});
}

std::unique_ptr<SlotFiller> make_device_file_filler(std::shared_ptr<const ExpertSource> src, Backend& be,
                                                    const ReadOptions& o) {
  return std::make_unique<DeviceFiller>(nullptr, std::move(src), be, o);
}

}  // namespace ts
