// What the CPU *and the operating system* support. An instruction set counts only when CPUID lists it
// and XGETBV shows the OS saves its registers: these machines list AMX in /proc/cpuinfo, yet AMX
// instructions raise SIGILL because the kernel never enabled the tile state.
#pragma once
#include <string>

namespace ts {

struct CpuFeatures {
  bool avx2 = false;        // with FMA and F16C
  bool avx512 = false;      // F, BW, VL, DQ
  bool avx512_vnni = false;
  bool amx = false;         // reported for information; no kernel uses it
  std::string describe() const;
};

// Detected once; TURBOSPARK_ISA=scalar|avx2|avx512|avx512vnni caps it (tests use this to run every
// kernel path on one machine and compare it with the scalar reference).
const CpuFeatures& cpu_features();

}  // namespace ts
