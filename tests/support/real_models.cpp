#include "support/real_models.h"

#include <cstdlib>
#include <cstring>

namespace ts::test {

bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && (!std::strcmp(ci, "true") || !std::strcmp(ci, "1"));
}

}  // namespace ts::test
