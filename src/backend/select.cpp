// --device: which backend runs the model. CUDA is compiled in only when the build found nvcc
// (TURBOSPARK_CUDA); "auto" falls back to the CPU when there is no usable device.
#include "backend/backend.h"

#include <cstring>

#include "util/error.h"

#ifdef TURBOSPARK_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace ts {

Mat Backend::pack(const Mat& host, void* dst) const {
  std::memcpy(dst, host.data, packed_bytes(host));
  return Mat{host.type, dst, host.rows, host.cols, host.row_stride};
}

void Backend::route_experts(const RoutedExperts&, Act, int32_t*) {
  fail("internal error: the {} backend does not route experts on its device", name());
}
void Backend::run_experts(const RoutedExperts&, Act) {
  fail("internal error: the {} backend does not run routed experts as one operation", name());
}
void Backend::combine_experts(const RoutedExperts&, Act, Act) {
  fail("internal error: the {} backend does not run routed experts as one operation", name());
}

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
  return make_cuda_backend(cpu_threads);
#else
  fail("--device cuda: {}", why);
#endif
}

}  // namespace ts
