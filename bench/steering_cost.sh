#!/usr/bin/env bash
# Decode speed with every layer steered against unsteered, on the same model and threads, runs
# interleaved (plain, steered, plain, ...) so that machine drift hits both alike. Prints each pair,
# then the medians, the spread and the ratio steered / plain.
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

decode_rate() {  # prints the decode tok/s that `run` reports on stderr
  "$bin" run "${model_args[@]}" -p "Tell me a story about a dragon" -n "$tokens" --temp 0 -t "$threads" "$@" \
    2>&1 >/dev/null | sed -n 's/.*decode [0-9]* tok, \([0-9.]*\) tok\/s.*/\1/p'
}

plain=() steered=()
decode_rate > /dev/null  # warm-up: page cache and CPU frequency
for ((i = 0; i < reps; i++)); do
  p=$(decode_rate)
  s=$(decode_rate --steering "$vector" --steering-mode "$mode")
  [ -n "$p" ] && [ -n "$s" ] || { echo "error: no decode rate in the output of $bin run" >&2; exit 1; }
  plain+=("$p") steered+=("$s")
  echo "pair $((i + 1)): plain $p tok/s, steered ($mode, every layer) $s tok/s"
done
python3 - "${plain[*]}" "${steered[*]}" <<'PY'
import statistics as st, sys
p = [float(x) for x in sys.argv[1].split()]
s = [float(x) for x in sys.argv[2].split()]
ratios = [b / a for a, b in zip(p, s)]
print(f"plain   median {st.median(p):.2f} tok/s (min {min(p):.2f}, max {max(p):.2f})")
print(f"steered median {st.median(s):.2f} tok/s (min {min(s):.2f}, max {max(s):.2f})")
print(f"ratio steered/plain: median of pairs {st.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
PY
