// cuBLAS, loaded with dlopen when the first CUDA backend is made. Linking it would map its ~600 MB
// of libraries into every run of the program: about 215 MB resident and half a second at start,
// CPU runs and `--help` included.
#pragma once
#include <cublas_v2.h>

namespace ts::gpu {

struct Blas {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  // cublasGemmEx has a C++ overload (computeType as cudaDataType): name the C entry point's type.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                            cudaDataType, int, const void*, cudaDataType, int, const void*, void*, cudaDataType, int,
                            cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasGetStatusString) status_string;
};

// The library's entry points, loaded on first use (a ts::Error saying why when it cannot be).
const Blas& blas();

}  // namespace ts::gpu
