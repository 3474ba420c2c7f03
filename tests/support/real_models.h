// Real models for the end-to-end tests, looked up where `turbospark fetch` and the default model put
// them (runtime/model_cache.h's cache_dir(), so $TURBOSPARK_CACHE and $XDG_CACHE_HOME are honoured
// the same way). A missing model skips the test on a developer's machine; under CI=true it fails the
// test, because a CI run that silently skips the real-model checks proves nothing about them.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "runtime/model_cache.h"

namespace ts::test {

bool running_in_ci();  // CI=true (or 1) in the environment

}  // namespace ts::test

// In a test body: stops the test unless PATH exists (skip, or a failure under CI=true).
#define TS_REQUIRE_REAL_MODEL(path)                                                                     \
  do {                                                                                                  \
    if (!std::filesystem::exists(path)) {                                                               \
      if (::ts::test::running_in_ci()) FAIL() << (path) << " is missing and CI=true: fetch it with `turbospark fetch`"; \
      GTEST_SKIP() << (path) << " is not in the cache (`turbospark fetch NAME` downloads it)";          \
    }                                                                                                   \
  } while (0)
