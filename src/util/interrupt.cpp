// SIGINT/SIGTERM to a flag, checked by the write loop (see interrupt.h for why).
#include "util/interrupt.h"

#include <atomic>

#include "util/error.h"

namespace ts {
namespace {

// Set from a signal handler: a lock-free atomic is the only thing it may touch.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_signal(int sig) { g_signal.store(sig, std::memory_order_relaxed); }

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal.store(0);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

void InterruptGuard::check() const {
  if (const int sig = g_signal.load(std::memory_order_relaxed))
    fail("interrupted by signal {}; the partial output was removed", sig);
}

}  // namespace ts
