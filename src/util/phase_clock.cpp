#include "util/phase_clock.h"

#include <atomic>

namespace ts {
namespace {
std::atomic<PhaseClock*> g_active{nullptr};
}

const char* phase_name(Phase p) {
  static const char* names[kPhaseCount] = {"router", "expert I/O wait", "expert compute", "attention",
                                           "other dense compute", "sampling", "other"};
  return names[static_cast<int>(p)];
}

PhaseClock::PhaseClock() : since_(Clock::now()) {}

Phase PhaseClock::enter(Phase p) {
  const auto now = Clock::now();
  sec_[static_cast<int>(cur_)] += std::chrono::duration<double>(now - since_).count();
  since_ = now;
  const Phase prev = cur_;
  cur_ = p;
  return prev;
}

std::array<double, kPhaseCount> PhaseClock::seconds() const {
  std::array<double, kPhaseCount> s = sec_;
  s[static_cast<int>(cur_)] += std::chrono::duration<double>(Clock::now() - since_).count();
  return s;
}

PhaseClock* PhaseClock::active() { return g_active.load(std::memory_order_relaxed); }
void PhaseClock::set_active(PhaseClock* c) { g_active.store(c, std::memory_order_relaxed); }

}  // namespace ts
