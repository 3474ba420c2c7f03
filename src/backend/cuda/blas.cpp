#include "backend/cuda/blas.h"

#include <dlfcn.h>

#include <string>

#include "util/error.h"

namespace ts::gpu {
namespace {

// The cuBLAS of the toolkit the backend was compiled with (its soname carries the major version):
// from the loader's path (and the program's RUNPATH), else from that toolkit's library folder.
Blas load() {
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const std::string first = dlerror();
    const std::string path = std::string(TS_CUDA_LIBRARY_DIR) + "/" + name;
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) fail("the CUDA backend needs cuBLAS: cannot load {} ({}) nor {} ({})", name, first, path, dlerror());
  }
  auto sym = [&]<class F>(F& f, const char* symbol) {
    f = reinterpret_cast<F>(dlsym(lib, symbol));
    if (!f) fail("{} has no {}: a cuBLAS of another version?", name, symbol);
  };
  Blas b{};
  sym(b.create, "cublasCreate_v2");
  sym(b.destroy, "cublasDestroy_v2");
  sym(b.set_stream, "cublasSetStream_v2");
  sym(b.gemm_ex, "cublasGemmEx");
  sym(b.sgemm, "cublasSgemm_v2");
  sym(b.status_string, "cublasGetStatusString");
  return b;  // the library stays loaded for the process
}

}  // namespace

const Blas& blas() {
  static const Blas b = load();
  return b;
}

}  // namespace ts::gpu
