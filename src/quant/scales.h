// Scale fields that both the CPU decoders (quant/blocks.h) and the CUDA kernels (backend/cuda) read,
// defined once and compiled for the host and, under nvcc, for the device too.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define TS_QUANT_HD __host__ __device__ inline
#else
#define TS_QUANT_HD inline
#endif

namespace ts::quant {

// MXFP4 stores E2M1 values doubled so they are integers; the scale is then halved to compensate:
// the bits of 2^(e-128) rather than the E8M0 value 2^(e-127). e = 0 and 1 give subnormal floats.
TS_QUANT_HD uint32_t e8m0_half_bits(uint8_t e) { return e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23; }

// 6-bit scale and min j (0..7) of a Q4_K/Q5_K super-block from its 12 packed bytes: the first four
// pairs sit in the low 6 bits of bytes 0..7; the last four are split into nibbles of bytes 8..11
// with their top two bits in the spare bits of bytes 0..7.
template <class T>
TS_QUANT_HD void k_scale_min(const uint8_t* s, int j, T& sc, T& mn) {
  if (j < 4) {
    sc = static_cast<T>(s[j] & 63);
    mn = static_cast<T>(s[j + 4] & 63);
  } else {
    sc = static_cast<T>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    mn = static_cast<T>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

}  // namespace ts::quant
