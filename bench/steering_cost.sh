#!/usr/bin/env bash
# Decode speed with every layer steered against unsteered, on the same model and threads, runs
# interleaved (plain, steered, plain, ...) so that machine drift hits both alike. For each run it
# records the decode tok/s that `run` reports and the CPU seconds the process used (user + system;
# with THREADS=1 this is the work itself, far less sensitive to other load on a shared machine than
# wall time). Prints each pair, then medians, spread and the ratios steered / plain.
# The prompt is raw text (no chat template), so neither run stops at an end-of-turn before TOKENS.
# Usage: bench/steering_cost.sh [REPS] [MODE]   (env: TURBOSPARK, MODEL, VECTOR, THREADS, TOKENS)
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-7}"
mode="${2:-add}"
bin="${TURBOSPARK:-build/turbospark}"
model="${MODEL:-}"
vector="${VECTOR:-tests/data/steering/smollm2-happy.cvec.gguf:0.3}"
threads="${THREADS:-2}"
tokens="${TOKENS:-64}"
model_args=()
[ -n "$model" ] && model_args=(-m "$model")
err=$(mktemp)
trap 'rm -f "$err"' EXIT

measure() {  # prints "DECODE_TOK_PER_S CPU_SECONDS" for one run
  local TIMEFORMAT='%U %S' cpu
  cpu=$( { time "$bin" run "${model_args[@]}" -p "Once upon a time, in a land far away," -n "$tokens" --temp 0 \
             -t "$threads" "$@" > /dev/null 2> "$err"; } 2>&1 )
  local rate
  rate=$(sed -n "s/.*decode $tokens tok, \([0-9.]*\) tok\/s.*/\1/p" "$err")
  [ -n "$rate" ] || { echo "error: no decode rate for $tokens tokens in: $(cat "$err")" >&2; exit 1; }
  echo "$rate $(echo "$cpu" | awk '{print $1 + $2}')"
}

plain=() steered=()
measure > /dev/null  # warm-up: page cache and CPU frequency
for ((i = 0; i < reps; i++)); do
  p=$(measure)
  s=$(measure --steering "$vector" --steering-mode "$mode")
  plain+=("$p") steered+=("$s")
  echo "pair $((i + 1)): plain $p, steered ($mode, every layer) $s   (decode tok/s, CPU s)"
done
python3 - "${plain[*]}" "${steered[*]}" <<'PY'
import statistics as st, sys
def pairs(text):
    v = [float(x) for x in text.split()]
    return v[0::2], v[1::2]
(pr, pc), (sr, sc) = pairs(sys.argv[1]), pairs(sys.argv[2])
for name, p, s in (("decode tok/s", pr, sr), ("CPU seconds", pc, sc)):
    r = [b / a for a, b in zip(p, s)]
    print(f"{name}: plain median {st.median(p):.3f} ({min(p):.3f}..{max(p):.3f}), "
          f"steered median {st.median(s):.3f} ({min(s):.3f}..{max(s):.3f}), "
          f"steered/plain median of pairs {st.median(r):.4f} ({min(r):.4f}..{max(r):.4f})")
PY
