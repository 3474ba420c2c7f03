// Progress of a long write on stderr: a redrawn bar when stderr is a terminal, otherwise (logs, CI)
// one plain line every few seconds, so a 12 GB write is visibly alive without flooding a log file.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace ts {

class Progress {
 public:
  // label: what is being done ("synth", "pack"), printed at the start of each plain line.
  Progress(const char* label, uint64_t total_bytes);
  // Called with the bytes done so far; draws only when enough time has passed since the last draw.
  void update(uint64_t done);
  // Draws the final state of the bar (if any) and ends its line.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void draw(uint64_t done, double elapsed);

  const char* label_;
  uint64_t total_;
  bool tty_;
  Clock::time_point start_, last_;
};

}  // namespace ts
