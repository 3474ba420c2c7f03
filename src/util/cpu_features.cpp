#include "util/cpu_features.h"

#include <cpuid.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "util/error.h"

namespace ts {
namespace {

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27), fma = c & (1u << 12), f16c = c & (1u << 29);
  if (!osxsave) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool os_avx = (xcr0 & 0x6) == 0x6;             // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;      // XTILECFG, XTILEDATA
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = os_avx && (b & (1u << 5)) && fma && f16c;
  f.avx512 = os_avx512 && f.avx2 && (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31)) && (b & (1u << 17));
  f.avx512_vnni = f.avx512 && (c & (1u << 11));
  f.amx = os_amx && (d & (1u << 24));
  return f;
}

CpuFeatures capped(CpuFeatures f) {
  const char* cap = std::getenv("TURBOSPARK_ISA");
  if (!cap || !*cap) return f;
  if (!std::strcmp(cap, "scalar")) {
    f.avx2 = f.avx512 = f.avx512_vnni = false;
  } else if (!std::strcmp(cap, "avx2")) {
    f.avx512 = f.avx512_vnni = false;
  } else if (!std::strcmp(cap, "avx512")) {
    f.avx512_vnni = false;
  } else if (std::strcmp(cap, "avx512vnni") != 0) {
    fail("TURBOSPARK_ISA='{}': expected scalar, avx2, avx512 or avx512vnni", cap);
  }
  return f;
}

}  // namespace

std::string CpuFeatures::describe() const {
  if (avx512_vnni) return "avx512-vnni";
  if (avx512) return "avx512";
  if (avx2) return "avx2";
  return "scalar";
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = capped(detect());
  return f;
}

}  // namespace ts
