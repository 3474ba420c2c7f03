#include "model/parity_util.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/ranges.h>

namespace ts::test {
namespace {

std::vector<double> log_softmax(const float* row, int64_t n) {
  const double mx = *std::max_element(row, row + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(row[i] - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = row[i] - lse;
  return out;
}

}  // namespace

Distance distance(const std::vector<float>& ref, const std::vector<float>& ours, int64_t vocab) {
  if (ours.size() != ref.size())
    throw std::runtime_error(fmt::format("{} logits, expected {}", ours.size(), ref.size()));
  for (float x : ours)
    if (!std::isfinite(x)) throw std::runtime_error("non-finite logits");
  const int64_t rows = static_cast<int64_t>(ref.size()) / vocab;
  double num = 0, den = 0;
  int64_t top = 0;
  std::vector<double> kl(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = ref.data() + r * vocab;
    const float* b = ours.data() + r * vocab;
    for (int64_t i = 0; i < vocab; ++i) {
      const double d = static_cast<double>(a[i]) - b[i];
      num += d * d;
      den += static_cast<double>(a[i]) * a[i];
    }
    top += std::max_element(a, a + vocab) - a == std::max_element(b, b + vocab) - b;
    const std::vector<double> la = log_softmax(a, vocab), lb = log_softmax(b, vocab);
    for (int64_t i = 0; i < vocab; ++i) kl[r] += std::exp(la[i]) * (la[i] - lb[i]);
  }
  Distance d{std::sqrt(num / den), static_cast<double>(top) / rows, 0, 0};
  for (double v : kl) d.mean_kl += v / rows;
  std::sort(kl.begin(), kl.end());
  d.median_kl = rows % 2 ? kl[rows / 2] : (kl[rows / 2 - 1] + kl[rows / 2]) / 2;
  return d;
}

bool passes(const Fixture& f, const Distance& ours, const Distance& llamacpp) {
  if (f.unquantized()) return ours.rel_l2 <= 1e-3;
  return ours.mean_kl <= std::max(1.5 * llamacpp.mean_kl, 1e-5) && ours.top1 >= llamacpp.top1 - 0.05;
}

bool passes_exact(const Distance& ours) { return ours.rel_l2 <= kExactRelL2 && ours.mean_kl <= kExactMeanKl; }

std::vector<float> cli_logits(const Fixture& f, const std::vector<std::string>& flags, const ScratchDir& dir) {
  static int n_calls = 0;
  const std::string out = dir.file(fmt::format("logits{}.f32", n_calls++));
  std::vector<std::string> args{"logits", "-m", f.gguf(), "--tokens", f.tokens(), "-o", out};
  args.insert(args.end(), flags.begin(), flags.end());
  const CliRun r = run_cli(args);
  if (!r.exited || r.code != 0)
    throw std::runtime_error(fmt::format("turbospark logits {} failed ({}): {}", fmt::join(flags, " "),
                                         r.exited ? "exit " + std::to_string(r.code) : "killed by a signal", r.err));
  return read_floats(out);
}

std::string describe(const Distance& d) {
  return fmt::format("rel={:.2e} top1={:.3f} kl={:.2e} median_kl={:.2e}", d.rel_l2, d.top1, d.mean_kl, d.median_kl);
}

}  // namespace ts::test
