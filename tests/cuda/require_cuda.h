// GPU tests run only where a usable CUDA device is present; elsewhere they skip, saying why.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "backend/backend.h"

#define TS_REQUIRE_CUDA()                                                   \
  do {                                                                      \
    std::string why_;                                                       \
    if (!::ts::cuda_available(&why_)) GTEST_SKIP() << "needs CUDA: " << why_; \
  } while (0)
