// Ctrl-C during a long write (synth, pack): instead of dying with a half-written OUT.partial on
// disk, the write loop sees the flag at its next block and throws, and the writer's destructor
// removes the temporary output. Only SIGINT and SIGTERM are caught, only while a guard is alive.
#pragma once
#include <csignal>

namespace ts {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers
  ~InterruptGuard();  // restores the previous ones
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Throws ts::Error ("interrupted") if a signal arrived since construction.
  void check() const;

 private:
  struct sigaction old_int_{}, old_term_{};
};

}  // namespace ts
