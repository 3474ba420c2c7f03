// Progress drawing; throttled so that a fast write does not spend its time printing.
#include "util/progress.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace ts {

Progress::Progress(const char* label, uint64_t total_bytes)
    : label_(label), total_(total_bytes), tty_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()), last_(start_) {}

void Progress::update(uint64_t done) {
  const auto now = Clock::now();
  const auto interval = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (now - last_ < interval) return;
  last_ = now;
  draw(done, std::chrono::duration<double>(now - start_).count());
}

void Progress::draw(uint64_t done, double elapsed) {
  const double frac = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  const double mb = static_cast<double>(done) / 1e6;
  const double rate = elapsed > 0 ? mb / elapsed : 0.0;
  const double eta = rate > 0 ? (static_cast<double>(total_ - done) / 1e6) / rate : 0.0;
  if (tty_) {
    constexpr int kWidth = 40;
    const int fill = static_cast<int>(frac * kWidth);
    std::fprintf(stderr, "\r[%s%s] %5.1f%%  %.0f / %.0f MB  %.0f MB/s  ETA %.0fs ",
                 std::string(fill, '#').c_str(), std::string(kWidth - fill, '.').c_str(), 100.0 * frac, mb,
                 static_cast<double>(total_) / 1e6, rate, eta);
  } else {
    std::fprintf(stderr, "%s: %.1f%% (%.0f of %.0f MB, %.0f MB/s, ETA %.0fs)\n", label_, 100.0 * frac, mb,
                 static_cast<double>(total_) / 1e6, rate, eta);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (!tty_) return;
  draw(total_, std::chrono::duration<double>(Clock::now() - start_).count());
  std::fputc('\n', stderr);
}

}  // namespace ts
