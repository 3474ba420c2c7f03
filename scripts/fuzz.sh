#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/*_fuzz.cpp) for a bounded time under ASan + UBSan, built with
# Debian's clang, from a seed corpus made of tests/data. A crash, a sanitizer report, a leak, an
# input slower than 10 s or a process above 2 GiB fails the script, and libFuzzer writes the input to
# fuzz/regressions/TARGET/: commit it with the fix, and every test build replays it from then on.
# TURBOSPARK_FUZZ_SECONDS sets the time per target (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${TURBOSPARK_FUZZ_SECONDS:-60}"
out=build-fuzz
# Line tables only (-g1), as in test.sh's sanitizer build: crash reports keep files and lines.
cmake -S . -B "$out" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DTURBOSPARK_TESTS=OFF -DTURBOSPARK_SANITIZE=OFF -DTURBOSPARK_FUZZ=ON -DTURBOSPARK_CUDA=OFF
cmake --build "$out" -j"$(nproc)" --target fuzz_targets

# Seeds, made from tests/data: small models and vocabularies as they are, rank files and token
# lists cut short (libFuzzer mutates small inputs far faster), one JSON request per rendering case.
seeds="$out/seeds"
rm -rf "$seeds" && mkdir -p "$seeds"/{gguf,tokenizer_gguf,tiktoken,token_file,chat_request,vocabs}
(cd "$seeds/vocabs" && cmake -E tar xf "$OLDPWD/tests/data/tokenizers/vocabs.tar.xz")
find tests/data/models -name '*.gguf' -size -1600k -exec cp {} "$seeds/gguf/" \;
find "$seeds/vocabs" -name '*.gguf' -size -2M -exec cp {} "$seeds/tokenizer_gguf/" \;
cp "$seeds"/tokenizer_gguf/ggml-vocab-llama-spm.gguf "$seeds/gguf/"
for f in "$seeds"/vocabs/*.tiktoken; do head -n 3000 "$f" > "$seeds/tiktoken/$(basename "$f")"; done
for f in tests/data/models/*.tokens.txt; do cp "$f" "$seeds/token_file/"; done
python3 - "$seeds/chat_request" tests/data/templates/renderings.json tests/data/templates/generated-renderings.json <<'PY'
import json, sys
out, n = sys.argv[1], 0
for path in sys.argv[2:]:
    for cases in json.load(open(path))["renderings"].values():
        for case in cases:
            n += 1
            with open(f"{out}/case{n:03d}.json", "w") as f:
                json.dump(case["input"], f)
PY

# One target: its log in $out, the lines that matter printed once it ends; fails without a DONE line.
fuzz_one() {
  local t=$1 corpus="$out/corpus/$1"
  mkdir -p "$corpus" "fuzz/regressions/$t"
  "$out/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="fuzz/regressions/$t/" "$corpus" "$seeds/$t" > "$out/fuzz_$t.log" 2>&1 || true
  echo "== fuzz_$t: $seconds s, $(ls "$seeds/$t" | wc -l) seeds, corpus now $(ls "$corpus" | wc -l) inputs"
  grep -E "^(#[0-9]+[[:space:]]+DONE|stat::|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)" "$out/fuzz_$t.log" || true
  if ! grep -q "DONE" "$out/fuzz_$t.log"; then
    echo "fuzz_$t FAILED: see $out/fuzz_$t.log; the input is in fuzz/regressions/$t/" >&2
    return 1
  fi
}

# Each fuzzer is one process on one core: as many run at once as the machine has cores (CI's two
# take the five targets in three rounds of $seconds s instead of five).
status=0
pids=()
for t in gguf tokenizer_gguf tiktoken token_file chat_request; do
  fuzz_one "$t" &
  pids+=("$!")
  if [ "${#pids[@]}" -ge "$(nproc)" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit "$status"
