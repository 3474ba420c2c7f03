// Disjoint wall-clock buckets for --phases: at any moment exactly one phase is running, so the
// buckets add up to the wall time between start and report. Code marks the phase it is in with a
// PhaseScope (restoring the enclosing phase on exit). The clock is process-wide and off unless the
// CLI installs one: a PhaseScope then costs one load and one branch. Only the thread that runs the
// forward pass switches phases.
#pragma once
#include <array>
#include <chrono>

namespace ts {

enum class Phase : int { Router, ExpertIoWait, ExpertCompute, Attention, DenseCompute, Sampling, Other, Count };
inline constexpr int kPhaseCount = static_cast<int>(Phase::Count);
const char* phase_name(Phase p);  // "router", "expert I/O wait", ...

class PhaseClock {
 public:
  PhaseClock();  // starts now, in Phase::Other
  Phase enter(Phase p);  // returns the phase that was running
  std::array<double, kPhaseCount> seconds() const;  // the running phase counted up to now

  static PhaseClock* active();
  static void set_active(PhaseClock* c);  // nullptr: off

 private:
  using Clock = std::chrono::steady_clock;
  std::array<double, kPhaseCount> sec_{};
  Phase cur_ = Phase::Other;
  Clock::time_point since_;
};

class PhaseScope {
 public:
  explicit PhaseScope(Phase p) : clock_(PhaseClock::active()) {
    if (clock_) prev_ = clock_->enter(p);
  }
  ~PhaseScope() {
    if (clock_) clock_->enter(prev_);
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseClock* clock_;
  Phase prev_ = Phase::Other;
};

}  // namespace ts
