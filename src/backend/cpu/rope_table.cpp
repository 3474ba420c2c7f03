#include "backend/cpu/rope_table.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ts {
namespace {

// The rotary dimension whose wavelength completes n_rot turns over the original context.
double yarn_corr_dim(double n_dims, double n_ctx_orig, double n_rot, double base) {
  return n_dims * std::log(n_ctx_orig / (n_rot * 2 * std::numbers::pi)) / (2 * std::log(base));
}

}  // namespace

void compute_rope_table(const std::vector<int64_t>& positions, RopeTable& t) {
  const RopeParams& p = t.params;
  const int64_t half = p.n_rot / 2, n = static_cast<int64_t>(positions.size());
  t.cos.resize(n * half);
  t.sin.resize(n * half);
  const double d = static_cast<double>(p.n_rot);
  double lo = 0, hi = 0, mscale = 1;
  const bool yarn = p.yarn_factor > 0;
  if (yarn) {
    lo = std::max(0.0, std::floor(yarn_corr_dim(d, p.yarn_orig_ctx, p.yarn_beta_fast, p.base)));
    hi = std::min(d - 1, std::ceil(yarn_corr_dim(d, p.yarn_orig_ctx, p.yarn_beta_slow, p.base)));
    mscale = 1.0 + 0.1 * std::log(p.yarn_factor);
  }
  for (int64_t i = 0; i < n; ++i) {
    // Linear scaling interpolates positions: the model sees position p as p / factor.
    const double pos = static_cast<double>(positions[i]) / p.linear_factor;
    for (int64_t j = 0; j < half; ++j) {
      double theta_ext = pos * std::pow(p.base, -2.0 * j / d);
      // rope_freqs divides each frequency (Llama 3.1 lowers the low frequencies this way).
      if (p.freq_factors) theta_ext /= p.freq_factors[j];
      double theta = theta_ext;
      if (yarn) {
        // ramp = 1 keeps the original frequency (high-frequency dims), 0 interpolates fully.
        const double ramp = 1.0 - std::clamp((j - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
        theta = theta_ext / p.yarn_factor * (1 - ramp) + theta_ext * ramp;
      }
      t.cos[i * half + j] = static_cast<float>(std::cos(theta) * mscale);
      t.sin[i * half + j] = static_cast<float>(std::sin(theta) * mscale);
    }
  }
}

}  // namespace ts
