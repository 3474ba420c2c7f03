#include "model/kv_cache.h"

#include "util/error.h"

namespace ts {

namespace {
int64_t checked_ctx(int64_t ctx) {
  if (ctx <= 0) fail("the context size must be positive, got {}", ctx);
  return ctx;
}
}  // namespace

KvCache::KvCache(Backend& be, const HParams& h, int64_t ctx)
    : n_ctx(checked_ctx(ctx)), be_(be), handle_(be.alloc_kv(h.n_layer, ctx, h.n_head_kv * h.head_dim)) {}

KvCache::~KvCache() { be_.free_kv(handle_); }

}  // namespace ts
