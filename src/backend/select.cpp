// --device: which backend runs the model. CUDA is compiled in only when the build found nvcc
// (TURBOSPARK_CUDA); "auto" falls back to the CPU when there is no usable device.
#include "backend/backend.h"
#include "util/error.h"

#ifdef TURBOSPARK_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace ts {

bool cuda_available(std::string* why) {
#ifdef TURBOSPARK_HAVE_CUDA
  return cuda_device_usable(why);
#else
  if (why) *why = "this build has no CUDA backend (configure with -DTURBOSPARK_CUDA=ON where nvcc is installed)";
  return false;
#endif
}

std::unique_ptr<Backend> make_backend(const std::string& device, int cpu_threads, Precision precision, KvType kv_type) {
  if (device == "cpu") return make_cpu_backend(cpu_threads, precision, kv_type);
  if (device != "cuda" && device != "auto") fail("unknown --device '{}' (cpu, cuda or auto)", device);
  std::string why;
  if (!cuda_available(&why)) {
    if (device == "auto") return make_cpu_backend(cpu_threads, precision, kv_type);
    fail("--device cuda: {}", why);
  }
#ifdef TURBOSPARK_HAVE_CUDA
  return make_cuda_backend();
#else
  fail("--device cuda: {}", why);
#endif
}

}  // namespace ts
