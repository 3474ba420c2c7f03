// RoPE tables from positions: linear scaling divides positions, rope_freqs divides frequencies, and
// both are exact transformations that the tables must reproduce bit for bit.
#include "backend/cpu/rope_table.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ts {
namespace {

RopeTable table(const RopeParams& p, const std::vector<int64_t>& pos) {
  RopeTable t{p, {}, {}};
  compute_rope_table(pos, t);
  return t;
}

RopeParams plain() {
  RopeParams p;
  p.layout = RopeParams::Layout::NeoX;
  p.n_rot = 64;
  p.base = 500000.0;
  return p;
}

TEST(RopeTable, PlainRotationMatchesTheDefinition) {
  const RopeTable t = table(plain(), {0, 7, 1000});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 32; ++j) {
      const double theta = std::vector<double>{0, 7, 1000}[i] * std::pow(500000.0, -2.0 * j / 64);
      EXPECT_EQ(t.cos[i * 32 + j], static_cast<float>(std::cos(theta)));
      EXPECT_EQ(t.sin[i * 32 + j], static_cast<float>(std::sin(theta)));
    }
}

TEST(RopeTable, LinearScalingDividesPositions) {
  RopeParams scaled = plain();
  scaled.linear_factor = 4.0;
  const RopeTable a = table(scaled, {0, 8, 400, 4000});
  const RopeTable b = table(plain(), {0, 2, 100, 1000});
  EXPECT_EQ(a.cos, b.cos);
  EXPECT_EQ(a.sin, b.sin);
  EXPECT_NE(a.cos, table(plain(), {0, 8, 400, 4000}).cos);
}

TEST(RopeTable, FreqFactorsDivideEachFrequency) {
  std::vector<float> ff(32);
  for (int j = 0; j < 32; ++j) ff[j] = j < 16 ? 1.0f : 8.0f;  // Llama 3.1 lowers low frequencies
  RopeParams p = plain();
  p.freq_factors = ff.data();
  const RopeTable t = table(p, {5, 3000});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 32; ++j) {
      const double theta = std::vector<double>{5, 3000}[i] * std::pow(500000.0, -2.0 * j / 64) / ff[j];
      EXPECT_EQ(t.cos[i * 32 + j], static_cast<float>(std::cos(theta))) << i << " " << j;
    }
  // Uniform factors of 2 at position 2p rotate exactly as no factors at p.
  std::vector<float> two(32, 2.0f);
  p.freq_factors = two.data();
  EXPECT_EQ(table(p, {6, 2000}).sin, table(plain(), {3, 1000}).sin);
}

}  // namespace
}  // namespace ts
