// Streamed experts: per layer, a fixed set of slots in backend memory, planned by SlotPlanner and
// filled by a SlotFiller (reads from the files, or copies from pinned host memory into device
// slots). One mutex guards the planners and slot states; reader threads only flip a slot's I/O
// state (and wake the waiter); everything else happens on the forward thread.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>

#include "residency/slot_filler.h"
#include "residency/stores.h"
#include "util/error.h"
#include "util/phase_clock.h"

namespace ts {
namespace {

class StreamedExperts final : public ExpertStore {
 public:
  StreamedExperts(std::shared_ptr<const ExpertSource> src, std::unique_ptr<SlotFiller> filler, Backend& be,
                  const StreamOptions& o)
      : src_(std::move(src)), be_(be), opt_(o), layers_(src_->n_layer()) {
    try {
      for (int64_t l = 0; l < src_->n_layer(); ++l) {
        if (!src_->is_moe(l)) continue;
        Layer& L = layers_[l];
        L.planner = std::make_unique<SlotPlanner>(o.slots_per_layer, src_->n_expert(), o.policy);
        L.slot_bytes = filler->slot_bytes(l);
        L.mem = be.alloc_buffer(checked_mul(L.slot_bytes, static_cast<uint64_t>(o.slots_per_layer), "expert cache"), filler->memory());
        L.slots.resize(o.slots_per_layer);
      }
    } catch (...) {
      free_buffers();
      throw;
    }
    filler_ = std::move(filler);
  }

  ~StreamedExperts() override {
    filler_.reset();  // waits for reads in flight: their callbacks touch the slots
    free_buffers();
  }

  void request(int64_t layer, std::span<const int32_t> experts) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (!src_->is_moe(layer)) fail("internal error: experts requested from layer {}, which has none", layer);
    layer_ = layer;
    failure_.clear();
    planned_.clear();  // an abandoned call's planned experts: their reads finish and are reaped later
    pending_.assign(experts.begin(), experts.end());
    reap(layer);
    cancel_wrong_prefetches(layer);
    host_.clear();
    if (host_offered_ && opt_.host_share > 0) hand_to_host();
    host_offered_ = false;
    schedule();
  }

  void offer_host(Activation act, int64_t tokens) override {
    std::lock_guard<std::mutex> lk(mu_);
    host_offered_ = true;
    host_act_ = act;
    host_tokens_ = tokens;
  }

  ExpertLease next() override {
    std::unique_lock<std::mutex> lk(mu_);
    if (layer_ < 0) return {};
    Layer& L = layers_[layer_];
    for (;;) {
      reap(layer_);
      if (!failure_.empty()) {
        const std::string msg = std::move(failure_);
        failure_.clear();
        pending_.clear();
        planned_.clear();
        throw Error(msg);
      }
      schedule();
      for (size_t i = 0; i < planned_.size(); ++i) {
        const auto [e, s] = planned_[i];
        if (L.planner->state(s) != SlotPlanner::State::Valid) continue;
        planned_.erase(planned_.begin() + static_cast<std::ptrdiff_t>(i));
        ++L.slots[s].leases;
        filler_->before_use(layer_, s);
        return make_lease(layer_, e, s, filler_->view(layer_, e, slot_memory(L, s)));
      }
      if (planned_.empty()) {
        if (pending_.empty()) {
          // The host's experts last: the device's work (and the copies of its misses) is queued first.
          if (host_.empty()) return {};
          const auto [e, v] = host_.front();
          host_.erase(host_.begin());
          return make_lease(layer_, e, -1, v);
        }
        // Nothing fits now. Slots still being read (prefetches) become evictable when their reads
        // land; if none is being read, only a released lease could free one: the caller holds them.
        const bool reading = std::any_of(L.slots.begin(), L.slots.end(), [](const Slot& s) { return s.io == Io::Reading; });
        if (!reading)
          fail("expert cache of layer {}: every one of its {} slots is leased; release a lease before asking for the next expert",
               layer_, L.slots.size());
      }
      PhaseScope wait(Phase::ExpertIoWait);
      cv_.wait(lk);
    }
  }

  bool wants_prefetch() const override { return opt_.prefetch; }

  void prefetch(int64_t layer, std::span<const int32_t> experts) override {
    if (!opt_.prefetch || layer < 0 || layer >= src_->n_layer() || !src_->is_moe(layer)) return;
    std::lock_guard<std::mutex> lk(mu_);
    reap(layer);
    Layer& L = layers_[layer];
    // The predicted experts already in a slot are protected too: evicting one to read another
    // predicted expert would turn a predicted hit into a miss (on the 20b's routing, 3-6% more bytes).
    std::vector<int32_t> prot = protect(layer);
    misses_.clear();
    for (int32_t e : experts) {
      const int32_t s = L.planner->slot_of(e);
      if (s < 0) misses_.push_back(e);
      else prot.push_back(s);
    }
    const size_t n = L.planner->fit(misses_, prot);
    if (n == 0) return;
    const SlotPlan p = L.planner->plan({misses_.data(), n}, prot, /*count_use=*/false);
    for (const SlotPlan::Entry& en : p.entries) {
      ++stats_.prefetch_reads;
      evicting(L, en);
      L.slots[en.slot].prefetched = true;
      start_read(layer, en.slot, en.expert, ReaderPool::Priority::Prefetch);
    }
  }

  ExpertStats stats() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return stats_;
  }

  int32_t lease_limit(int64_t) const override { return opt_.slots_per_layer; }

 protected:
  void release(int64_t layer, int32_t slot) override {
    if (slot < 0) return;  // an expert computed where it lies holds no slot
    std::lock_guard<std::mutex> lk(mu_);
    --layers_[layer].slots[slot].leases;
    filler_->after_use(layer, slot);
    cv_.notify_all();
  }

 private:
  enum class Io : uint8_t { Idle, Reading, Done, Failed };
  struct Slot {
    int32_t leases = 0;
    Io io = Io::Idle;
    bool prefetched = false;  // filled by a prefetch and not used since
    bool cancelled = false;   // its read was cancelled; a chunk is still being read into it
    std::string error;
  };
  struct Layer {
    std::unique_ptr<SlotPlanner> planner;
    Buffer mem;
    uint64_t slot_bytes = 0;
    std::vector<Slot> slots;
  };

  static uint8_t* slot_memory(Layer& L, int32_t s) {
    return static_cast<uint8_t*>(L.mem.data) + static_cast<uint64_t>(s) * L.slot_bytes;
  }

  void free_buffers() {
    for (Layer& L : layers_)
      if (L.mem.data) be_.free_buffer(L.mem);
  }

  // Slots that must not be evicted in `layer`: leased, planned for the current call and not yet
  // handed out, or still written by a cancelled read. (Slots being read are protected by the
  // planner itself.)
  std::vector<int32_t> protect(int64_t layer) const {
    std::vector<int32_t> p;
    const Layer& L = layers_[layer];
    for (int32_t s = 0; s < static_cast<int32_t>(L.slots.size()); ++s)
      if (L.slots[s].leases > 0 || L.slots[s].cancelled) p.push_back(s);
    if (layer == layer_)
      for (const auto& [e, s] : planned_) p.push_back(s);
    return p;
  }

  // Completed reads become valid; failed ones leave their slot empty. A failure of a slot the
  // current call waits for stops the call (next() throws it); a failed prefetch is only dropped.
  void reap(int64_t layer) {
    Layer& L = layers_[layer];
    for (int32_t s = 0; s < static_cast<int32_t>(L.slots.size()); ++s) {
      Slot& sl = L.slots[s];
      if (sl.cancelled) {  // the planner let go of it when it was cancelled
        if (sl.io == Io::Done || sl.io == Io::Failed) {
          sl.io = Io::Idle;
          sl.cancelled = false;
        }
        continue;
      }
      if (sl.io == Io::Done) {
        filler_->landed(layer, s, slot_memory(L, s));
        L.planner->commit(s);
        sl.io = Io::Idle;
      } else if (sl.io == Io::Failed) {
        const int32_t e = L.planner->expert_in(s);
        L.planner->abandon(s);
        sl.io = Io::Idle;
        sl.prefetched = false;
        if (layer == layer_ && failure_.empty())
          for (const auto& [pe, ps] : planned_)
            if (ps == s) failure_ = fmt::format("cannot read {}: {}", src_->describe(layer, e), sl.error);
      }
    }
  }

  // Prefetches of this layer that its call does not ask for stop reading (on the 20b under a 6 GiB
  // cap, 277 of 281 wrong guesses were still being read when their layer came): their slots are
  // free sooner, and the reader pool's time goes to the reads that are needed. The expert leaves
  // the planner at once (a later request or prediction of it reads it afresh); a slot with a chunk
  // still being read into it stays protected until that chunk lands (reap()).
  void cancel_wrong_prefetches(int64_t layer) {
    Layer& L = layers_[layer];
    for (int32_t s = 0; s < static_cast<int32_t>(L.slots.size()); ++s) {
      Slot& sl = L.slots[s];
      if (sl.io != Io::Reading || !sl.prefetched ||
          std::find(pending_.begin(), pending_.end(), L.planner->expert_in(s)) != pending_.end())
        continue;
      uint64_t unread = 0;
      const ReaderPool::Cancel c = filler_->cancel(layer, s, unread);
      if (c == ReaderPool::Cancel::TooLate) continue;
      ++stats_.prefetch_cancelled;
      stats_.bytes_read -= unread;
      sl.prefetched = false;
      L.planner->abandon(s);
      if (c == ReaderPool::Cancel::Over) sl.io = Io::Idle;
      else sl.cancelled = true;
    }
  }

  void evicting(Layer& L, const SlotPlan::Entry& en) {
    if (en.evicted >= 0 && L.slots[en.slot].prefetched) ++stats_.prefetch_wasted;
    L.slots[en.slot].prefetched = false;
  }

  // A share of the call's misses stays where it lies for the backend's host threads, the least used
  // first (ties in router order), so the slots keep going to the experts that come back. They count
  // as requests and uses, neither as hits nor as reads.
  void hand_to_host() {
    Layer& L = layers_[layer_];
    misses_.clear();
    for (int32_t e : pending_)
      if (L.planner->slot_of(e) < 0) misses_.push_back(e);
    const auto share = static_cast<size_t>(std::llround(static_cast<double>(misses_.size()) * opt_.host_share));
    std::stable_sort(misses_.begin(), misses_.end(), [&](int32_t a, int32_t b) { return L.planner->uses(a) < L.planner->uses(b); });
    for (size_t i = 0; i < misses_.size() && host_.size() < share; ++i) {
      const int32_t e = misses_[i];
      ExpertView v;
      if (!filler_->host_view(layer_, e, v) || !be_.computes_on_host(v, host_act_, host_tokens_)) return;
      host_.emplace_back(e, v);
      L.planner->note_use(e);
      ++stats_.requests;
      ++stats_.host_computed;
      pending_.erase(std::find(pending_.begin(), pending_.end(), e));
    }
  }

  // Plans as much of the current call's pending experts as the free slots allow: hits first (they
  // cost nothing and pin their slots before any miss could evict them), then misses in router order.
  void schedule() {
    if (pending_.empty()) return;
    Layer& L = layers_[layer_];
    std::stable_partition(pending_.begin(), pending_.end(), [&](int32_t e) { return L.planner->slot_of(e) >= 0; });
    const std::vector<int32_t> prot = protect(layer_);
    const size_t n = L.planner->fit(pending_, prot);
    if (n == 0) return;
    const SlotPlan p = L.planner->plan({pending_.data(), n}, prot);
    for (const SlotPlan::Entry& en : p.entries) {
      ++stats_.requests;
      if (en.hit) {
        ++stats_.hits;
        if (L.slots[en.slot].prefetched) ++stats_.prefetch_hits;
        L.slots[en.slot].prefetched = false;
      } else {
        ++stats_.reads;
        evicting(L, en);
        start_read(layer_, en.slot, en.expert, ReaderPool::Priority::Demand);
      }
      planned_.emplace_back(en.expert, en.slot);
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
  }

  void start_read(int64_t layer, int32_t s, int32_t e, ReaderPool::Priority priority) {
    Layer& L = layers_[layer];
    L.slots[s].io = Io::Reading;
    L.slots[s].error.clear();
    const bool ready = filler_->fill(layer, e, s, slot_memory(L, s), priority, [this, layer, s](const std::string& err) {
      std::lock_guard<std::mutex> lk(mu_);
      Slot& sl = layers_[layer].slots[s];
      sl.io = err.empty() ? Io::Done : Io::Failed;
      sl.error = err;
      cv_.notify_all();
    }, stats_.bytes_read);
    if (ready) {  // valid for all later work already: no read to wait for
      L.planner->commit(s);
      L.slots[s].io = Io::Idle;
    }
  }

  std::shared_ptr<const ExpertSource> src_;
  Backend& be_;
  StreamOptions opt_;
  std::vector<Layer> layers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  ExpertStats stats_;
  // The current layer call.
  int64_t layer_ = -1;
  std::vector<int32_t> pending_;                      // requested, not planned yet
  std::vector<std::pair<int32_t, int32_t>> planned_;  // (expert, slot): planned, not handed out yet
  std::string failure_;                               // a planned expert's read failed
  std::vector<int32_t> misses_;
  std::vector<std::pair<int32_t, ExpertView>> host_;  // handed out where they lie, after the slots' leases
  bool host_offered_ = false;                         // offer_host() before this call's request()
  Activation host_act_ = Activation::SwiGLU;
  int64_t host_tokens_ = 0;
  std::unique_ptr<SlotFiller> filler_;  // destroyed first (see the destructor)
};

}  // namespace

std::unique_ptr<ExpertStore> make_streamed_experts(std::shared_ptr<const ExpertSource> src, Backend& be,
                                                   const StreamOptions& o) {
  std::unique_ptr<SlotFiller> filler = make_file_filler(src, o.read);
  return std::make_unique<StreamedExperts>(std::move(src), std::move(filler), be, o);
}

std::unique_ptr<ExpertStore> make_device_streamed_experts(ExpertStore* from, std::shared_ptr<const ExpertSource> src,
                                                          Backend& be, const StreamOptions& o) {
  std::unique_ptr<SlotFiller> filler = from ? make_device_filler(*from, src, be) : make_device_file_filler(src, be, o.read);
  return std::make_unique<StreamedExperts>(std::move(src), std::move(filler), be, o);
}

}  // namespace ts
