#!/usr/bin/env bash
# Expert residency on the synthesized gpt-oss 20b (docs/RESIDENCY.md): decode under real cgroup v1
# memory caps from a cold page cache, cache-size sweeps, the one-layer-ahead prefetch experiment, and
# llama.cpp side by side. Every configuration runs REPS times, interleaved (round-robin), and the
# summary gives the median and the min..max spread. Rows name --expert-prefetch on or off: its
# default (auto) depends on the cache size.
#
#   sudo bench/residency.sh [capped|sweep|prefetch|uncapped|mini|all]     (default: all)
#
# Environment:
#   TS           turbospark binary (default build/turbospark)
#   MODEL        the GGUF (default /work/models/gpt-oss-20b.gguf)
#   INSTALL      its install directory (default $OUT/20b.install; packed from MODEL when missing)
#   MINI         the small gpt-oss for the `mini` rows (default /work/models/gpt-oss-mini.gguf; its
#                install directory $OUT/mini.install is packed when missing)
#   LLAMA_BENCH  llama.cpp's llama-bench; unset: the llama.cpp rows are skipped (never built here)
#   THREADS=2 TOKENS=16 REPS=3 OUT=bench-out/residency
#   WARMUP=16    tokens fed before the measured ones in the warm rows (WARMUP_MINI=48 for mini's)
#   ONLY=REGEX   run only the configurations whose names match (e.g. ONLY='prefetch|mini')
# Needs root: cgroup v1 memory groups under /sys/fs/cgroup/memory and /proc/sys/vm/drop_caches
# (dropping the page cache affects the whole machine for a moment).
set -euo pipefail
cd "$(dirname "$0")/.."

TS=${TS:-build/turbospark}
MODEL=${MODEL:-/work/models/gpt-oss-20b.gguf}
OUT=${OUT:-bench-out/residency}
INSTALL=${INSTALL:-$OUT/20b.install}
MINI=${MINI:-/work/models/gpt-oss-mini.gguf}
THREADS=${THREADS:-2}
TOKENS=${TOKENS:-16}
REPS=${REPS:-3}
WARMUP=${WARMUP:-16}
WARMUP_MINI=${WARMUP_MINI:-48}
WHAT=${1:-all}
CG=/sys/fs/cgroup/memory/ts-bench-$$
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"

[ "$(id -u)" = 0 ] || { echo "residency.sh: needs root (cgroup caps, drop_caches)" >&2; exit 1; }
[ -d /sys/fs/cgroup/memory ] || { echo "residency.sh: no cgroup v1 memory controller" >&2; exit 1; }
[ -x "$TS" ] || { echo "residency.sh: $TS not found (build first)" >&2; exit 1; }
[ -d "$INSTALL" ] || "$TS" pack "$MODEL" -o "$INSTALL"
if [ "$WHAT" = mini ] || [ "$WHAT" = all ]; then [ -d "$OUT/mini.install" ] || "$TS" pack "$MINI" -o "$OUT/mini.install"; fi

python3 - "$OUT" "$TOKENS" "$WARMUP" "$WARMUP_MINI" <<'PY'
import random, sys
out, n = sys.argv[1], int(sys.argv[2])
# Token ids below the vocabulary (20b: 201088; mini: 32768).
w, wm = int(sys.argv[3]), int(sys.argv[4])
for name, count, vocab in (("decode", n, 200000), ("warm", w + n, 200000), ("decode-mini", n, 32000), ("warm-mini", wm + n, 32000)):
    r = random.Random(len(name))
    open(f"{out}/{name}.txt", "w").write("".join(f"{r.randrange(1000, vocab)}\n" for _ in range(count)))
PY

drop_caches() { sync; echo 1 > /proc/sys/vm/drop_caches; }

# run_one NAME CAP_MIB(0: none) COLD(0/1) KIND(ts|llama) ARGS...
run_one() {
  local name=$1 cap=$2 cold=$3 kind=$4; shift 4
  local json="$OUT/$name.json" err="$OUT/$name.err" status=0 t0 t1
  rm -f "$json"
  [ "$cold" = 1 ] && drop_caches
  # The machine's 1-minute load average as the run starts (results.jsonl): how much the neighbours
  # were competing for the CPU.
  local load cpu="$OUT/$name.cpu"
  load=$(cut -d' ' -f1 /proc/loadavg)
  local pre=()
  if [ "$cap" != 0 ]; then
    mkdir "$CG"
    echo $((cap << 20)) > "$CG/memory.limit_in_bytes"
    echo $((cap << 20)) > "$CG/memory.memsw.limit_in_bytes" 2>/dev/null || true
    pre=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG")
  fi
  t0=$(date +%s.%N)
  if [ "$kind" = ts ]; then
    # GNU time's user + system CPU seconds: what the run cost, whatever the load did to its wall time.
    /usr/bin/time -o "$cpu" -f "%U %S" "${pre[@]}" "$TS" "$@" --phases-json "$json" -t "$THREADS" > /dev/null 2> "$err" || status=$?
  else
    /usr/bin/time -o "$cpu" -f "%U %S" "${pre[@]}" "$LLAMA_BENCH" "$@" -t "$THREADS" -o json > "$json" 2> "$err" || status=$?
  fi
  t1=$(date +%s.%N)
  local peak=0 oom=0
  if [ "$cap" != 0 ]; then
    peak=$(cat "$CG/memory.max_usage_in_bytes")
    oom=$(awk '/oom_kill /{print $2}' "$CG/memory.oom_control" 2>/dev/null || echo 0)
    rmdir "$CG"
  fi
  python3 - "$name" "$kind" "$cap" "$cold" "$status" "$t0" "$t1" "$peak" "${oom:-0}" "$json" "$cpu" "$load" >> "$RESULTS" <<'PY'
import json, sys
name, kind, cap, cold, status, t0, t1, peak, oom, path, cpu, load = sys.argv[1:]
row = {"name": name, "kind": kind, "cap_mib": int(cap), "cold": cold == "1", "status": int(status),
       "process_s": float(t1) - float(t0), "cgroup_peak": int(peak), "oom_kills": int(oom), "load": float(load)}
try:
    u, s = open(cpu).read().split()[-2:]
    row["cpu_s"] = float(u) + float(s)
except (OSError, ValueError):  # killed before GNU time wrote its line
    pass
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
TSW=(logits -m "$INSTALL" --tokens "$OUT/warm.txt" --sequential -o "$OUT/logits.f32" --phases-from "$WARMUP")
LB=(-m "$MODEL" -p 0 -n "$TOKENS" -r 1 --no-warmup)

configs=()
once=()
# add NAME ...: a configuration, once (groups share some), if ONLY lets it through.
add() {
  local c
  [[ -z "${ONLY:-}" || "$1" =~ $ONLY ]] || return 0
  for c in "${configs[@]}"; do [ "${c%% *}" = "$1" ] && return 0; done
  configs+=("$*")
}
case $WHAT in
  capped|all)
    add "ts-10g-cold 10240 1 ts ${TSD[*]} --direct-io --expert-prefetch off"
    add "ts-6g-cold 6144 1 ts ${TSD[*]} --direct-io --expert-prefetch off"
    add "ts-mapped-10g-cold 10240 1 ts ${TSD[*]} --expert-residency mapped"
    if [ -n "${LLAMA_BENCH:-}" ]; then
      add "llama-10g-cold 10240 1 llama ${LB[*]}"
      once+=(llama-6g-cold)  # the OOM killer ends it after minutes of thrashing: once is enough
      add "llama-6g-cold 6144 1 llama ${LB[*]}"
    fi ;;&
  prefetch|all)
    add "ts-10g-cold-prefetch 10240 1 ts ${TSD[*]} --direct-io --expert-prefetch on"
    add "ts-6g-cold-prefetch 6144 1 ts ${TSD[*]} --direct-io --expert-prefetch on"
    add "ts-6g-warm 6144 0 ts ${TSW[*]} --direct-io --expert-prefetch off"
    add "ts-6g-warm-prefetch 6144 0 ts ${TSW[*]} --direct-io --expert-prefetch on"
    # A warm cache that already hits often (24 of 32 slots): where prediction has the least to win.
    add "ts-slots24-warm 0 0 ts ${TSW[*]} --expert-residency streamed --expert-cache-slots 24 --direct-io --expert-prefetch off"
    add "ts-slots24-warm-prefetch 0 0 ts ${TSW[*]} --expert-residency streamed --expert-cache-slots 24 --direct-io --expert-prefetch on" ;;&
  sweep|all)
    for s in 4 8 16 24; do add "ts-slots$s-warm 0 0 ts ${TSW[*]} --expert-residency streamed --expert-cache-slots $s --direct-io --expert-prefetch off"; done ;;&
  uncapped|all)
    add "ts-resident-warm 0 0 ts ${TSW[*]} --expert-residency resident"
    add "ts-streamed32-warm 0 0 ts ${TSW[*]} --expert-residency streamed --expert-cache-slots 32 --direct-io --expert-prefetch off"
    if [ -n "${LLAMA_BENCH:-}" ]; then add "llama-uncapped-warm 0 0 llama -m $MODEL -p 0 -n $TOKENS -r 1"; fi ;;&
  mini|all)
    # gpt-oss mini (about 500 MB, 430 MB of it experts) under caps of about 3/4 and 1/2 of it, cold;
    # then warm, uncapped, per cache size, with and without prefetch.
    TM=(logits -m "$OUT/mini.install" --tokens "$OUT/decode-mini.txt" --sequential -o "$OUT/logits-mini.f32")
    TMW=(logits -m "$OUT/mini.install" --tokens "$OUT/warm-mini.txt" --sequential -o "$OUT/logits-mini.f32" --phases-from "$WARMUP_MINI")
    # Uncapped: streamed through a cache that holds every expert against resident.
    add "ts-mini-resident-warm 0 0 ts ${TMW[*]} --expert-residency resident"
    add "ts-mini-streamed32-warm 0 0 ts ${TMW[*]} --expert-residency streamed --expert-cache-slots 32 --direct-io --expert-prefetch off"
    for s in 8 16 24 28; do
      add "ts-mini-slots$s-warm 0 0 ts ${TMW[*]} --expert-residency streamed --expert-cache-slots $s --direct-io --expert-prefetch off"
      add "ts-mini-slots$s-warm-prefetch 0 0 ts ${TMW[*]} --expert-residency streamed --expert-cache-slots $s --direct-io --expert-prefetch on"
    done
    for cap in 384 256; do
      add "ts-mini-${cap}m-cold $cap 1 ts ${TM[*]} --direct-io --expert-prefetch off"
      add "ts-mini-${cap}m-cold-prefetch $cap 1 ts ${TM[*]} --direct-io --expert-prefetch on"
      if [ -n "${LLAMA_BENCH:-}" ]; then
        once+=("llama-mini-${cap}m-cold")  # killed by the OOM killer here too
        add "llama-mini-${cap}m-cold $cap 1 llama -m $MINI -p 0 -n $TOKENS -r 1 --no-warmup"
      fi
    done ;;
  *) ;;
esac
[ ${#configs[@]} -gt 0 ] || { echo "usage: $0 [capped|sweep|prefetch|uncapped|mini|all]" >&2; exit 2; }

echo "residency.sh: ${#configs[@]} configurations x $REPS, results in $RESULTS" >&2
for rep in $(seq "$REPS"); do
  echo "round $rep" >&2
  for c in "${configs[@]}"; do
    if [ "$rep" -gt 1 ] && [[ " ${once[*]} " == *" ${c%% *} "* ]]; then continue; fi
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
print("| configuration | runs | tok/s median (min..max) | hit rate | MB/token | I/O wait ms/token | CPU s | load | slots/layer | cgroup peak GiB | failures |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name, rs in by.items():
    ok = [r for r in rs if r["status"] == 0]
    t = med([r.get("tok_s") for r in ok])
    h = med([r.get("hit_rate") for r in ok])
    b = med([r.get("mb_per_token") for r in ok])
    w = med([1000 * r["io_wait_s"] / r["tokens"] for r in ok if "io_wait_s" in r])
    c = med([r.get("cpu_s") for r in ok])
    ld = med([r.get("load") for r in rs])
    fails = ", ".join(f"exit {r['status']}" + (" (OOM kill)" if r.get("oom_kills") else "") for r in rs if r["status"] != 0)
    peak = max((r["cgroup_peak"] for r in rs), default=0) / 2**30
    print(f"| {name} | {len(rs)} | " + (f"{t[0]:.2f} ({t[1]:.2f}..{t[2]:.2f})" if t else "-") + " | "
          + (f"{100*h[0]:.1f}%" if h else "-") + " | " + (f"{b[0]:.0f}" if b else "-") + " | "
          + (f"{w[0]:.0f}" if w else "-") + " | " + (f"{c[0]:.1f}" if c else "-") + " | "
          + (f"{ld[1]:.1f}..{ld[2]:.1f}" if ld else "-") + " | "
          + str(ok[0].get("slots", "-") if ok else "-") + f" | {peak:.2f} | {fails or '-'} |")
PY
