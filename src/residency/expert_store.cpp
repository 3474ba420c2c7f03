#include "residency/expert_store.h"

#include <utility>

namespace ts {

ExpertLease& ExpertLease::operator=(ExpertLease&& o) noexcept {
  if (this != &o) {
    release();
    store_ = std::exchange(o.store_, nullptr);
    layer_ = o.layer_;
    expert_ = o.expert_;
    slot_ = o.slot_;
    view_ = o.view_;
  }
  return *this;
}

void ExpertLease::release() {
  if (store_) std::exchange(store_, nullptr)->release(layer_, slot_);
}

ExpertLease ExpertStore::make_lease(int64_t layer, int32_t expert, int32_t slot, const ExpertView& v) {
  ExpertLease l;
  l.store_ = this;
  l.layer_ = layer;
  l.expert_ = expert;
  l.slot_ = slot;
  l.view_ = v;
  return l;
}

}  // namespace ts
