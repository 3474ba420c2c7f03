// The per-sequence key/value cache: one KvLayer per layer, n_ctx positions. The context limit is a
// hard bound: a forward call past it is a clear error, never a write past the buffer.
#pragma once
#include <vector>

#include "backend/backend.h"
#include "model/hparams.h"

namespace ts {

struct KvCache {
  KvCache(Backend& be, const HParams& h, int64_t n_ctx);
  int64_t n_ctx;
  int64_t n_past = 0;  // positions filled
  std::vector<KvLayer> layers;
};

}  // namespace ts
