#include "backend/cuda/check.h"

#include "util/error.h"

namespace ts::gpu {

void fail_text(const std::string& message) { throw Error(message); }

}  // namespace ts::gpu
