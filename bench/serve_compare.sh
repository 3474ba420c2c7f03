#!/usr/bin/env bash
# `turbospark serve` against llama-server on one model: aggregate decode throughput and time to first
# token at 1, 4 and 16 concurrent streams (bench/serve_bench.py), the two servers started in turn
# (interleaved, REPS times, each on a fresh process) with the same threads and slots. Prints the
# median and the spread (min..max) per server and stream count; the raw rounds go to $OUT.
#
#   LLAMA_SERVER=/path/to/llama-server bench/serve_compare.sh MODEL.gguf
# Env: TURBOSPARK (build/turbospark), THREADS (2), STREAMS (1,4,16), TOKENS (64), REPS (3),
#      CTX (context per sequence, 1024), OUT (/tmp/serve_compare.jsonl), LLAMA_ENV (environment for
#      llama-server; default OMP_WAIT_POLICY=passive: on a shared, oversubscribed machine OpenMP's
#      spinning makes llama.cpp several times slower, and passive waiting is its best setting there),
#      BAN (token ids neither server may generate, e.g. 3-258: the byte tokens of a llama vocabulary,
#      whose invalid UTF-8 from random weights llama-server's output parser rejects).
set -euo pipefail
model=${1:?usage: LLAMA_SERVER=... $0 MODEL.gguf}
: "${LLAMA_SERVER:?set LLAMA_SERVER to a llama-server binary}"
ts=${TURBOSPARK:-build/turbospark}
threads=${THREADS:-2} streams=${STREAMS:-1,4,16} tokens=${TOKENS:-64} reps=${REPS:-3} ctx=${CTX:-1024}
out=${OUT:-/tmp/serve_compare.jsonl}
here="$(cd "$(dirname "$0")" && pwd)"
slots=$(tr ',' '\n' <<<"$streams" | sort -n | tail -1)
port=$((20000 + RANDOM % 20000))
: >"$out"
: >"$out.turbospark.log"
: >"$out.llama-server.log"

serve() {  # $1 = turbospark | llama-server; starts it in the background, sets $pid
  if [ "$1" = turbospark ]; then
    "$ts" serve -m "$model" --port "$port" -t "$threads" --parallel "$slots" --ctx "$ctx" --quiet 2>>"$out.turbospark.log" &
  else
    env ${LLAMA_ENV-OMP_WAIT_POLICY=passive} "$LLAMA_SERVER" -m "$model" --port "$port" -t "$threads" -tb "$threads" -np "$slots" -c $((slots * ctx)) \
      --no-webui >>"$out.llama-server.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { echo "$1 did not start (see $out.$1.log)" >&2; exit 1; }
    sleep 0.2
  done
  echo "$1 did not become healthy" >&2
  exit 1
}

trap '[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null' EXIT  # never leave a server behind

for rep in $(seq "$reps"); do
  for server in turbospark llama-server; do
    serve "$server"
    # llama-server's OpenAI endpoint runs gpt-oss output through its chat parser, which rejects random
    # weights' output; its native /completion endpoint generates the same way without it.
    api=openai
    [ "$server" = llama-server ] && api=llama
    python3 "$here/serve_bench.py" --url "http://127.0.0.1:$port" --api "$api" --streams "$streams" --tokens "$tokens" \
      --label "$server" --ban "${BAN:-}" --warmup | tee -a "$out"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    port=$((port + 1))  # the next server does not wait for this one's socket to be released
  done
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys = sorted({(r["streams"], r["label"]) for r in rows})
print(f"\n{'streams':>7} {'server':>13} {'agg tok/s median (min..max)':>30} {'TTFT s median (min..max)':>28} {'1-stream decode tok/s':>22}")
for n, label in keys:
    rs = [r for r in rows if r["streams"] == n and r["label"] == label]
    tp = [r["tok_per_s"] for r in rs]
    tt = [r["ttft_median_s"] for r in rs]
    dec = [r["stream_decode_tok_per_s"] for r in rs]
    print(f"{n:>7} {label:>13} {statistics.median(tp):>12.1f} ({min(tp):.1f}..{max(tp):.1f}) {statistics.median(tt):>14.3f} ({min(tt):.3f}..{max(tt):.3f}) {statistics.median(dec):>14.1f}")
for n in sorted({r["streams"] for r in rows}):
    a = statistics.median(r["tok_per_s"] for r in rows if r["streams"] == n and r["label"] == "turbospark")
    b = statistics.median(r["tok_per_s"] for r in rows if r["streams"] == n and r["label"] == "llama-server")
    print(f"{n:>2} streams: turbospark / llama-server aggregate throughput = {a / b:.2f}x")
PY
