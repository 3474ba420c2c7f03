#include "model/rope.h"

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

RopeTable make_rope_table(const HParams& h, RopeTable::Layout layout, double base, int64_t pos0, int64_t n) {
  RopeTable t;
  t.layout = layout;
  t.n_rot = h.n_rot;
  const int64_t half = h.n_rot / 2;
  t.cos.resize(n * half);
  t.sin.resize(n * half);
  const double d = static_cast<double>(h.n_rot);
  double lo = 0, hi = 0, mscale = 1;
  const bool yarn = h.yarn_factor > 0;
  if (yarn) {
    lo = std::max(0.0, std::floor(yarn_corr_dim(d, h.yarn_orig_ctx, h.yarn_beta_fast, base)));
    hi = std::min(d - 1, std::ceil(yarn_corr_dim(d, h.yarn_orig_ctx, h.yarn_beta_slow, base)));
    mscale = 1.0 + 0.1 * std::log(h.yarn_factor);
  }
  for (int64_t i = 0; i < n; ++i) {
    const double pos = static_cast<double>(pos0 + i);
    for (int64_t j = 0; j < half; ++j) {
      const double theta_ext = pos * std::pow(base, -2.0 * j / d);
      double theta = theta_ext;
      if (yarn) {
        // ramp = 1 keeps the original frequency (high-frequency dims), 0 interpolates fully.
        const double ramp = 1.0 - std::clamp((j - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
        theta = theta_ext / h.yarn_factor * (1 - ramp) + theta_ext * ramp;
      }
      t.cos[i * half + j] = static_cast<float>(std::cos(theta) * mscale);
      t.sin[i * half + j] = static_cast<float>(std::sin(theta) * mscale);
    }
  }
  return t;
}

}  // namespace ts
