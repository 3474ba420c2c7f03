// Every CUDA runtime call and every kernel launch is checked: a failure is a ts::Error naming the
// call (or kernel) and CUDA's own message, never a silent wrong result later. This header stays
// free of fmt (nvcc cannot compile its compile-time format checks); check.cpp throws.
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace ts::gpu {

[[noreturn]] void fail_text(const std::string& message);  // throws ts::Error(message)

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail_text(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
}

// After a launch: configuration errors are reported here, faults inside the kernel at the next
// synchronizing call (which is checked too).
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace ts::gpu

#define TS_CUDA(call) ::ts::gpu::check((call), #call)
