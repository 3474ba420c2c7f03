#!/usr/bin/env bash
# One stream's decode speed through `turbospark serve` against `turbospark run` on the same prompt,
# greedy, interleaved REPS times (the machine is shared: compare medians). The server is one process
# for all reps; `run` loads the model each time (not counted: its decode tok/s starts after the first token).
#
#   bench/serve_vs_run.sh MODEL.gguf
# Env: TURBOSPARK (build/turbospark), THREADS (2), TOKENS (64), REPS (7).
set -euo pipefail
model=${1:?usage: $0 MODEL.gguf}
ts=${TURBOSPARK:-build/turbospark}
threads=${THREADS:-2} tokens=${TOKENS:-64} reps=${REPS:-7}
here="$(cd "$(dirname "$0")" && pwd)"
prompt="Once upon a time, in a small village by the river, there lived an old clockmaker who"
port=$((20000 + RANDOM % 20000))
"$ts" serve -m "$model" --port "$port" -t "$threads" --parallel 1 --quiet 2>/dev/null &
pid=$!
trap 'kill "$pid" 2>/dev/null' EXIT
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.2; done
runs=() serves=()
for rep in $(seq "$reps"); do
  r=$("$ts" run -m "$model" -p "$prompt" -n "$tokens" --temp 0 -t "$threads" 2>&1 >/dev/null | sed -n 's/.*decode [0-9]* tok, \([0-9.]*\) tok\/s.*/\1/p')
  s=$(python3 "$here/serve_bench.py" --url "http://127.0.0.1:$port" --streams 1 --tokens "$tokens" --prompt "$prompt" \
      | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["stream_decode_tok_per_s"])')
  echo "rep $rep: run $r tok/s, serve $s tok/s"
  runs+=("$r") serves+=("$s")
done
python3 - "${runs[*]}" "${serves[*]}" <<'PY'
import statistics, sys
run = [float(x) for x in sys.argv[1].split()]
srv = [float(x) for x in sys.argv[2].split()]
r, s = statistics.median(run), statistics.median(srv)
print(f"decode tok/s, median (min..max): run {r:.1f} ({min(run):.1f}..{max(run):.1f}), "
      f"serve {s:.1f} ({min(srv):.1f}..{max(srv):.1f}); serve / run = {s / r:.3f}")
PY
