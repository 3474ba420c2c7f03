// cuBLAS is loaded at run time (backend/cuda/blas.h), not linked: its entry points must resolve
// wherever the CUDA backend is built, with or without a device.
#include <gtest/gtest.h>

#ifdef TURBOSPARK_HAVE_CUDA
#include <string>

#include "backend/cuda/blas.h"

namespace ts {
namespace {

TEST(Blas, EntryPointsLoadWithoutADevice) {
  const gpu::Blas& b = gpu::blas();
  for (const void* f : {reinterpret_cast<const void*>(b.create), reinterpret_cast<const void*>(b.destroy),
                        reinterpret_cast<const void*>(b.set_stream), reinterpret_cast<const void*>(b.gemm_ex),
                        reinterpret_cast<const void*>(b.sgemm), reinterpret_cast<const void*>(b.status_string)})
    EXPECT_NE(f, nullptr);
  // A call into the library that needs no device.
  EXPECT_EQ(std::string(b.status_string(CUBLAS_STATUS_INVALID_VALUE)), "an unsupported value or parameter was passed to the function");
}

}  // namespace
}  // namespace ts
#endif
