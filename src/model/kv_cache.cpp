#include "model/kv_cache.h"

#include "util/error.h"

namespace ts {

KvCache::KvCache(Backend& be, const HParams& h, int64_t ctx) : n_ctx(ctx) {
  if (ctx <= 0) fail("the context size must be positive, got {}", ctx);
  for (int64_t l = 0; l < h.n_layer; ++l) layers.push_back(be.alloc_kv(ctx, h.n_head_kv * h.head_dim));
}

}  // namespace ts
