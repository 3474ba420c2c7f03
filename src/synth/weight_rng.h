// Counter-based random weights: element i of tensor T under seed S is a pure function of (S, T, i).
// There is no generator state to carry from one element to the next, so any row block can be made
// on any thread in any order and the file comes out byte-identical.
#pragma once
#include <cstdint>
#include <string_view>

namespace ts::synth {

// splitmix64's finalizer: a bijective 64-bit mix with good avalanche.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The per-tensor key: FNV-1a of the name, folded with the mixed seed.
inline uint64_t tensor_key(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL ^ mix64(seed);
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ULL;
  return mix64(h);
}

// An approximately standard normal value: the sum of four 16-bit uniforms (Irwin-Hall), rescaled to
// unit variance. Bounded by +-2*sqrt(3), which is fine for weights and cheaper than Box-Muller.
inline float unit_normal(uint64_t key, uint64_t index) {
  const uint64_t r = mix64(key + (index + 1) * 0x9e3779b97f4a7c15ULL);
  const int64_t sum = static_cast<int64_t>((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48));
  constexpr float kScale = 1.7320508f / 65536.0f;  // sqrt(3) / 2^16: unit variance
  return static_cast<float>(sum - 131070) * kScale;
}

}  // namespace ts::synth
