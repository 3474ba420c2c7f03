#!/usr/bin/env bash
# One call on the lent GPU machine (docs/CUDA.md, "Building and running"): builds this checkout with
# the carried Debian packages, then runs what the arguments name, in order, and prints a summary of
# every timing last (the device tool returns the end of the output). Timings of the synthesized
# gpt-oss 20b (synthesized once per machine into $MODEL_DIR, in the background while the builds
# run) are interleaved rounds of `turbospark bench`; each baseline build to compare with is a `git
# archive` of CMakeLists.txt, src and bench (or a variant's tree) unpacked and built beside this one.
#
#   bash bench/gpu_session.sh [--base BASE.tar.xz]... STEP...
#
# Steps:
#   tests               cuda_tests, then model_tests' *Cuda* cases (every fixture on the device)
#   bytes               every fixture's logits on both paths (`logits`, decode and batched), this
#                       build's against each base's: cmp, one line per differing case, then counts
#   resident            tg128 at depth 0 and 8192, pp512 (bench -r 3)
#   streamed            decode through a quarter and a half of the experts in slots (bench -n 64 -r 2)
#   prefetch            decode at a quarter with --expert-prefetch off and on
#   host-share          decode at a quarter with host shares 0, 0.25 and 0.5
# Environment: DEPS (default .devdeps, from ../shared/tools/device_deps.sh), ROUNDS (default 2),
# MODEL_DIR (default /tmp/ts-models), OUT (the device tool's output folder; default gpu-out), and
# EXTRA: flags added to every bench run of this build (not the bases'), for a variant under test.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
DEPS=${DEPS:-.devdeps}
ROUNDS=${ROUNDS:-2}
MODEL_DIR=${MODEL_DIR:-/tmp/ts-models}
OUT=${OUT:-gpu-out}
EXTRA=${EXTRA:-}
bases=()
while [ "${1:-}" = --base ]; do bases+=("$2"); shift 2; done
[ $# -gt 0 ] || { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
mkdir -p "$OUT" "$MODEL_DIR"
summary="$OUT/summary.txt"
: > "$summary"
# shellcheck disable=SC1091
. "$DEPS/env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$summary"
# The host's CPU too: streamed decode computes a share of the misses there, and the same build's
# streamed figures moved by a tenth between two H100 machines (docs/CUDA_LOG.md).
echo "host: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p')" | tee -a "$summary"

build() {  # build SRC_DIR BUILD_DIR TESTS(ON/OFF): the binary, and the GPU test binaries when ON
  local t0=$SECONDS targets=(turbospark)
  [ "$3" = ON ] && targets+=(cuda_tests model_tests)
  # shellcheck disable=SC2086
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTURBOSPARK_CUDA=ON -DTURBOSPARK_TESTS="$3" \
    $TS_DEPS_CMAKE_ARGS > "$OUT/cmake-$(basename "$2").log" 2>&1 || { tail -30 "$OUT/cmake-$(basename "$2").log"; exit 1; }
  cmake --build "$2" --target "${targets[@]}" > "$OUT/build-$(basename "$2").log" 2>&1 || { tail -40 "$OUT/build-$(basename "$2").log"; exit 1; }
  echo "built $1 in $((SECONDS - t0)) s" | tee -a "$summary"
}
needs_tests=OFF needs_model=false
for s in "$@"; do
  case $s in
    tests) needs_tests=ON ;;
    resident | streamed | prefetch | host-share) needs_model=true ;;
  esac
done
build . build-gpu "$needs_tests"
bins=(build-gpu/turbospark)
# The model is synthesized while the bases build (about two minutes on 16 cores); need_model waits.
model=$MODEL_DIR/gpt-oss-20b.gguf
synth_pid=""
if $needs_model && [ ! -f "$model" ]; then
  build-gpu/turbospark synth --arch gpt-oss --preset 20b -o "$model.part" > "$OUT/synth.log" 2>&1 && mv "$model.part" "$model" &
  synth_pid=$!
fi
need_model() {
  if [ -n "$synth_pid" ]; then wait "$synth_pid"; synth_pid=""; fi
  [ -f "$model" ] || { tail "$OUT/synth.log"; exit 1; }
}
for i in "${!bases[@]}"; do
  dir=/tmp/ts-base-$i
  rm -rf "$dir" && mkdir -p "$dir" && tar -xJf "${bases[$i]}" -C "$dir"
  build "$dir" "$dir/build" OFF
  bins+=("$dir/build/turbospark")
done

# bench_row NAME ARGS...: every build once per round, interleaved; one summary line per run.
bench_row() {
  local name=$1 b line extra
  shift
  for b in "${bins[@]}"; do
    extra=""
    [ "$b" = build-gpu/turbospark ] && extra=$EXTRA
    # shellcheck disable=SC2086
    line=$("$b" bench -m "$model" --device cuda "$@" $extra 2>&1 | tee -a "$OUT/bench.log" |
      grep -E '^\| (pp|tg)|expert cache over' | sed -e 's/  */ /g' | tr '\n' ' ')
    echo "$name [$b]: $line" | tee -a "$summary"
  done
}
quarter=(--expert-residency streamed --expert-cache-mb 2580)  # 8 of the 20b's 32 slots per layer
half=(--expert-residency streamed --expert-cache-mb 5160)

for step in "$@"; do
  case $step in
    tests)
      (build-gpu/tests/cuda_tests 2>&1 | tail -3; build-gpu/tests/model_tests --gtest_filter='*Cuda*' 2>&1 | tail -3) |
        tee -a "$summary" ;;
    bytes)
      for b in "${bins[@]:1}"; do
        same=0 differ=0
        for g in tests/data/models/*.gguf; do
          t=${g%.gguf}.tokens.txt
          [ -f "$t" ] || continue
          for mode in --sequential ""; do
            # shellcheck disable=SC2086
            if build-gpu/turbospark logits -m "$g" --tokens "$t" --device cuda $mode -o "$OUT/this.f32" > /dev/null 2>&1 &&
              "$b" logits -m "$g" --tokens "$t" --device cuda $mode -o "$OUT/base.f32" > /dev/null 2>&1 &&
              cmp -s "$OUT/this.f32" "$OUT/base.f32"; then
              same=$((same + 1))
            else
              differ=$((differ + 1))
              echo "bytes: $(basename "$g") ${mode:-batched} differs from [$b] (or a run failed)" | tee -a "$summary"
            fi
          done
        done
        rm -f "$OUT/this.f32" "$OUT/base.f32"
        echo "bytes [$b]: $same cases the same, $differ differ" | tee -a "$summary"
      done ;;
    resident)
      need_model
      for r in $(seq "$ROUNDS"); do
        bench_row "resident tg128 r$r" -p 512 -n 128 -r 3
        bench_row "resident tg128@d8192 r$r" -p 0 -n 128 -d 8192 -r 3
      done ;;
    streamed)
      need_model
      for r in $(seq "$ROUNDS"); do
        bench_row "quarter r$r" -p 0 -n 64 -r 2 "${quarter[@]}"
        bench_row "half r$r" -p 0 -n 64 -r 2 "${half[@]}"
      done ;;
    prefetch)
      need_model
      for r in $(seq "$ROUNDS"); do
        for p in off on; do bench_row "quarter prefetch $p r$r" -p 0 -n 64 -r 2 "${quarter[@]}" --expert-prefetch "$p"; done
      done ;;
    host-share)
      need_model
      for r in $(seq "$ROUNDS"); do
        for s in 0 0.25 0.5; do bench_row "quarter share $s r$r" -p 0 -n 64 -r 2 "${quarter[@]}" --expert-host-share "$s"; done
      done ;;
    *) echo "gpu_session.sh: unknown step '$step'" >&2; exit 2 ;;
  esac
done
echo "== summary"
cat "$summary"
