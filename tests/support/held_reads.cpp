#include "support/held_reads.h"

#include <unistd.h>

namespace ts::test {

ReaderPool::ReadFn HeldReads::fn() {
  return [this](int fd, void* buf, size_t n, uint64_t off) -> ssize_t {
    {
      std::unique_lock<std::mutex> lk(mu_);
      ++entered_;
      offsets_.push_back(off);
      cv_.notify_all();
      cv_.wait(lk, [&] { return open_; });
    }
    return ::pread(fd, buf, n, static_cast<off_t>(off));
  };
}

void HeldReads::wait_entered(int n) {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return entered_ >= n; });
}

void HeldReads::release() {
  std::lock_guard<std::mutex> lk(mu_);
  open_ = true;
  cv_.notify_all();
}

std::vector<uint64_t> HeldReads::offsets() {
  std::lock_guard<std::mutex> lk(mu_);
  return offsets_;
}

}  // namespace ts::test
