// The CUDA backend (Hopper, sm_90): weights in device memory in a row-local layout built for
// 16-byte loads (weight_layout.h), activations in f32, the KV cache in halves, one compute stream
// and one transfer stream. Decode steps (few rows) are recorded as CUDA graphs and replayed.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"

namespace ts {

// Whether a CUDA device this build can run on is present; `why` says why not.
bool cuda_device_usable(std::string* why);
// host_threads: the threads that compute routed experts on the host (streamed experts in pinned
// memory, Backend::computes_on_host), started at their first use.
std::unique_ptr<Backend> make_cuda_backend(int host_threads);

}  // namespace ts
