#!/usr/bin/env bash
# Expert residency on the synthesized gpt-oss 20b (docs/RESIDENCY.md): decode under real cgroup v1
# memory caps from a cold page cache, cache-size sweeps, the one-layer-ahead prefetch experiment, and
# llama.cpp side by side. Every configuration runs REPS times, interleaved (round-robin), and the
# summary gives the median and the min..max spread.
#
#   sudo bench/residency.sh [capped|sweep|prefetch|uncapped|all]     (default: all)
#
# Environment:
#   TS           turbospark binary (default build/turbospark)
#   MODEL        the GGUF (default /work/models/gpt-oss-20b.gguf)
#   INSTALL      its install directory (default $OUT/20b.install; packed from MODEL when missing)
#   LLAMA_BENCH  llama.cpp's llama-bench; unset: the llama.cpp rows are skipped (never built here)
#   THREADS=2 TOKENS=16 REPS=3 OUT=bench-out/residency
# Needs root: cgroup v1 memory groups under /sys/fs/cgroup/memory and /proc/sys/vm/drop_caches
# (dropping the page cache affects the whole machine for a moment).
set -euo pipefail
cd "$(dirname "$0")/.."

TS=${TS:-build/turbospark}
MODEL=${MODEL:-/work/models/gpt-oss-20b.gguf}
OUT=${OUT:-bench-out/residency}
INSTALL=${INSTALL:-$OUT/20b.install}
THREADS=${THREADS:-2}
TOKENS=${TOKENS:-16}
REPS=${REPS:-3}
WHAT=${1:-all}
CG=/sys/fs/cgroup/memory/ts-bench-$$
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"

[ "$(id -u)" = 0 ] || { echo "residency.sh: needs root (cgroup caps, drop_caches)" >&2; exit 1; }
[ -d /sys/fs/cgroup/memory ] || { echo "residency.sh: no cgroup v1 memory controller" >&2; exit 1; }
[ -x "$TS" ] || { echo "residency.sh: $TS not found (build first)" >&2; exit 1; }
[ -d "$INSTALL" ] || "$TS" pack "$MODEL" -o "$INSTALL"

python3 - "$OUT" "$TOKENS" <<'PY'
import random, sys
out, n = sys.argv[1], int(sys.argv[2])
for name, count in (("decode", n), ("warm", 32 + n)):
    r = random.Random(len(name))
    open(f"{out}/{name}.txt", "w").write("".join(f"{r.randrange(1000, 200000)}\n" for _ in range(count)))
PY

drop_caches() { sync; echo 1 > /proc/sys/vm/drop_caches; }

# run_one NAME CAP_GIB(0: none) COLD(0/1) KIND(ts|llama) ARGS...
run_one() {
  local name=$1 cap=$2 cold=$3 kind=$4; shift 4
  local json="$OUT/$name.json" err="$OUT/$name.err" status=0 t0 t1
  rm -f "$json"
  [ "$cold" = 1 ] && drop_caches
  local pre=()
  if [ "$cap" != 0 ]; then
    mkdir "$CG"
    echo $((cap << 30)) > "$CG/memory.limit_in_bytes"
    echo $((cap << 30)) > "$CG/memory.memsw.limit_in_bytes" 2>/dev/null || true
    pre=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG")
  fi
  t0=$(date +%s.%N)
  if [ "$kind" = ts ]; then
    "${pre[@]}" "$TS" "$@" --phases-json "$json" -t "$THREADS" > /dev/null 2> "$err" || status=$?
  else
    "${pre[@]}" "$LLAMA_BENCH" "$@" -t "$THREADS" -o json > "$json" 2> "$err" || status=$?
  fi
  t1=$(date +%s.%N)
  local peak=0 oom=0
  if [ "$cap" != 0 ]; then
    peak=$(cat "$CG/memory.max_usage_in_bytes")
    oom=$(awk '/oom_kill /{print $2}' "$CG/memory.oom_control" 2>/dev/null || echo 0)
    rmdir "$CG"
  fi
  python3 - "$name" "$kind" "$cap" "$cold" "$status" "$t0" "$t1" "$peak" "${oom:-0}" "$json" >> "$RESULTS" <<'PY'
import json, sys
name, kind, cap, cold, status, t0, t1, peak, oom, path = sys.argv[1:]
row = {"name": name, "kind": kind, "cap_gib": int(cap), "cold": cold == "1", "status": int(status),
       "process_s": float(t1) - float(t0), "cgroup_peak": int(peak), "oom_kills": int(oom)}
try:
    j = json.load(open(path))
    if kind == "ts":
        row.update(tok_s=j["tokens"] / j["wall_s"], hit_rate=j["hit_rate"], mb_per_token=j["bytes_per_token"] / 1e6,
                   slots=j["slots_per_layer"], residency=j["residency"], io_wait_s=j["phases_s"]["expert I/O wait"],
                   wall_s=j["wall_s"], tokens=j["tokens"], peak_rss=j["peak_rss"], prefetch_reads=j["prefetch_reads"],
                   prefetch_hits=j["prefetch_hits"])
    else:
        tg = [r for r in j if r.get("n_gen", 0) > 0]
        row.update(tok_s=tg[0]["avg_ts"] if tg else None)
except Exception as e:  # killed, or no output
    row["error"] = str(e)[:200]
print(json.dumps(row))
PY
  echo "  $name: exit $status, $(tail -n1 "$RESULTS" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r.get("tok_s"), "tok/s")')" >&2
}

TSD=(logits -m "$INSTALL" --tokens "$OUT/decode.txt" --sequential -o "$OUT/logits.f32")
TSW=(logits -m "$INSTALL" --tokens "$OUT/warm.txt" --sequential -o "$OUT/logits.f32" --phases-from 32)
LB=(-m "$MODEL" -p 0 -n "$TOKENS" -r 1 --no-warmup)

configs=()
add() { configs+=("$*"); }
case $WHAT in
  capped|all)
    add "ts-10g-cold 10 1 ts ${TSD[*]} --direct-io"
    add "ts-6g-cold 6 1 ts ${TSD[*]} --direct-io"
    add "ts-mapped-10g-cold 10 1 ts ${TSD[*]} --expert-residency mapped"
    if [ -n "${LLAMA_BENCH:-}" ]; then
      add "llama-10g-cold 10 1 llama ${LB[*]}"
      add "llama-6g-cold 6 1 llama ${LB[*]}"
    fi ;;&
  prefetch|all)
    add "ts-10g-cold-prefetch 10 1 ts ${TSD[*]} --direct-io --expert-prefetch on"
    add "ts-6g-cold-prefetch 6 1 ts ${TSD[*]} --direct-io --expert-prefetch on"
    add "ts-6g-warm 6 0 ts ${TSW[*]} --direct-io"
    add "ts-6g-warm-prefetch 6 0 ts ${TSW[*]} --direct-io --expert-prefetch on" ;;&
  sweep|all)
    for s in 4 8 16 24; do add "ts-slots$s-warm 0 0 ts ${TSW[*]} --expert-residency streamed --expert-cache-slots $s --direct-io"; done ;;&
  uncapped|all)
    add "ts-resident-warm 0 0 ts ${TSW[*]} --expert-residency resident"
    add "ts-streamed32-warm 0 0 ts ${TSW[*]} --expert-residency streamed --expert-cache-slots 32 --direct-io"
    if [ -n "${LLAMA_BENCH:-}" ]; then add "llama-uncapped-warm 0 0 llama -m $MODEL -p 0 -n $TOKENS -r 1"; fi ;;
  *) ;;
esac
[ ${#configs[@]} -gt 0 ] || { echo "usage: $0 [capped|sweep|prefetch|uncapped|all]" >&2; exit 2; }

echo "residency.sh: ${#configs[@]} configurations x $REPS, results in $RESULTS" >&2
for rep in $(seq "$REPS"); do
  echo "round $rep" >&2
  for c in "${configs[@]}"; do
    # shellcheck disable=SC2086
    run_one $c
  done
done

python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["name"], []).append(r)
def med(v):
    v = [x for x in v if x is not None]
    return (statistics.median(v), min(v), max(v)) if v else None
print("| configuration | runs | tok/s median (min..max) | hit rate | MB/token | slots/layer | cgroup peak GiB | failures |")
print("|---|---|---|---|---|---|---|---|")
for name, rs in by.items():
    ok = [r for r in rs if r["status"] == 0]
    t = med([r.get("tok_s") for r in ok])
    h = med([r.get("hit_rate") for r in ok])
    b = med([r.get("mb_per_token") for r in ok])
    fails = ", ".join(f"exit {r['status']}" + (" (OOM kill)" if r.get("oom_kills") else "") for r in rs if r["status"] != 0)
    peak = max((r["cgroup_peak"] for r in rs), default=0) / 2**30
    print(f"| {name} | {len(rs)} | " + (f"{t[0]:.2f} ({t[1]:.2f}..{t[2]:.2f})" if t else "-") + " | "
          + (f"{100*h[0]:.1f}%" if h else "-") + " | " + (f"{b[0]:.0f}" if b else "-") + " | "
          + str(ok[0].get("slots", "-") if ok else "-") + f" | {peak:.2f} | {fails or '-'} |")
PY
