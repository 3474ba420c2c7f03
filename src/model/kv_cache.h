// One sequence's key/value cache: the backend holds the memory (and picks its element type); this
// owns the handle and knows how many positions are filled. The context limit is a hard bound: a
// forward call past it is a clear error, never a write past the buffer.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "model/hparams.h"

namespace ts {

class KvCache {
 public:
  KvCache(Backend& be, const HParams& h, int64_t n_ctx);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  KvHandle handle() const { return handle_; }
  const int64_t n_ctx;
  int64_t n_past = 0;  // positions filled

 private:
  Backend& be_;
  KvHandle handle_;
};

}  // namespace ts
