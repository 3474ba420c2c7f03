#!/usr/bin/env bash
# TurboSpark against llama.cpp's and ik_llama.cpp's llama-bench, side by side on one machine:
# the same GGUF files, the same thread count, the same pp/tg sizes, runs interleaved (the order
# rotates every round) so that drift in the machine's speed hits every tool alike. Prints, per model
# and test, each tool's median tok/s with its spread, and TurboSpark's ratio to each yardstick as
# the median [min-max] of the per-round ratios (a round's runs are seconds apart, so its ratio is
# what drift disturbs least); records the versions, the machine and its load.
#
#   LLAMA_BENCH=/path/to/llama.cpp/build/bin/llama-bench \
#   IK_LLAMA_BENCH=/path/to/ik_llama.cpp/build/bin/llama-bench \
#   bench/compare.sh -m model.gguf [-m other.gguf] [-t 2] [-p 512] [-n 128] [-d 0] [-r 5] [-- extra turbospark flags]
#
# -d D measures decode after D tokens already in the KV cache (tgN@dD) instead of pp and tg: llama.cpp's
# `-d D`, ik_llama.cpp's `-gp D,N` (which times only the generated tokens), TurboSpark's `bench -d D`.
# Neither yardstick is built or fetched here: point the variables at existing binaries (a missing
# one is left out of the table). TURBOSPARK overrides the turbospark binary (default: build/turbospark).
# Each round runs every tool once (one timed repetition after its own warm-up); --json-out FILE keeps
# every sample.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ts_bin="${TURBOSPARK:-$here/../build/turbospark}"
threads=2 n_prompt=512 n_gen=128 n_depth=0 rounds=5 json_out=""
models=() ts_extra=()
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -m) models+=("$2"); shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    -p) n_prompt="$2"; shift 2 ;;
    -n) n_gen="$2"; shift 2 ;;
    -d) n_depth="$2"; shift 2 ;;
    -r) rounds="$2"; shift 2 ;;
    --json-out) json_out="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    --) shift; ts_extra=("$@"); break ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage 2 ;;
  esac
done
if ((n_depth > 0)); then n_prompt=0; fi
[[ ${#models[@]} -gt 0 ]] || { echo "compare.sh: give at least one -m MODEL" >&2; exit 2; }
[[ -x "$ts_bin" ]] || { echo "compare.sh: no turbospark binary at $ts_bin (build it or set TURBOSPARK)" >&2; exit 2; }
for m in "${models[@]}"; do [[ -f "$m" ]] || { echo "compare.sh: no model file $m" >&2; exit 2; }; done

tools=(turbospark)
declare -A bin=([turbospark]="$ts_bin")
for pair in llama.cpp:LLAMA_BENCH ik_llama.cpp:IK_LLAMA_BENCH; do
  name="${pair%%:*}" var="${pair#*:}"
  path="${!var:-}"
  if [[ -n "$path" && -x "$path" ]]; then tools+=("$name"); bin[$name]="$path"
  else echo "compare.sh: $name left out ($var does not name an executable llama-bench)" >&2; fi
done

samples="$(mktemp)"
trap 'rm -f "$samples"' EXIT
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

# One timed run of one tool on one model in round R; appends
# "model<TAB>round<TAB>tool<TAB>test<TAB>tok/s<TAB>version" lines.
run_one() {
  local model="$1" round="$2" tool="$3" out
  if [[ "$tool" == turbospark ]]; then
    out="$("${bin[$tool]}" bench -m "$model" -t "$threads" -p "$n_prompt" -n "$n_gen" -d "$n_depth" -r 1 --json "${ts_extra[@]}")"
    python3 - "$model" "$round" "$out" "$("${bin[$tool]}" --version)" >>"$samples" <<'EOF'
import json, sys
model, rnd, out, version = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
at = f"@d{out['n_depth']}" if out["n_depth"] else ""
for test, n in (("pp", out["n_prompt"]), ("tg", out["n_gen"])):
    if test in out:
        print(f"{model}\t{rnd}\tturbospark\t{test}{n}{at}\t{out[test]}\t{version} ({out['isa']}, {out['precision']})")
EOF
  else
    local tests=(-p "$n_prompt" -n "$n_gen")
    if ((n_depth > 0)); then
      if [[ "$tool" == llama.cpp ]]; then tests=(-p 0 -n "$n_gen" -d "$n_depth"); else tests=(-p 0 -n 0 -gp "$n_depth,$n_gen"); fi
    fi
    out="$("${bin[$tool]}" -m "$model" -t "$threads" "${tests[@]}" -r 1 -o json 2>/dev/null)"
    python3 - "$model" "$round" "$tool" "$out" >>"$samples" <<'EOF'
import json, sys
model, rnd, tool, rows = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
for r in rows:
    if r["n_gen"] == 0:
        test = f"pp{r['n_prompt']}"
    elif r.get("n_depth", 0):  # llama.cpp -d
        test = f"tg{r['n_gen']}@d{r['n_depth']}"
    elif r["n_prompt"]:  # ik_llama.cpp -gp: generation after a prompt, only the generated tokens timed
        test = f"tg{r['n_gen']}@d{r['n_prompt']}"
    else:
        test = f"tg{r['n_gen']}"
    print(f"{model}\t{rnd}\t{tool}\t{test}\t{r['avg_ts']}\t{r.get('build_commit', '?')} (build {r.get('build_number', '?')})")
EOF
  fi
}

for model in "${models[@]}"; do
  for ((round = 0; round < rounds; round++)); do
    n=${#tools[@]}
    for ((i = 0; i < n; i++)); do
      tool="${tools[$(((i + round) % n))]}"
      echo "[$(date +%T)] $(basename "$model") round $((round + 1))/$rounds: $tool" >&2
      run_one "$model" "$round" "$tool"
    done
  done
done

python3 - "$samples" "$threads" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "$json_out" "${tools[@]}" <<'EOF'
import json, os, platform, statistics, sys
path, threads, load0, load1, json_out, tools = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"machine: {cpu}, {os.cpu_count()} CPUs; {threads} threads; load average {load0} before, {load1} after")
versions = {}
for m, rnd, tool, test, v, ver in rows:
    versions[tool] = ver
for tool in tools:
    print(f"  {tool}: {versions.get(tool, '?')}")
data, by_round = {}, {}
for m, rnd, tool, test, v, ver in rows:
    data.setdefault((m, test), {}).setdefault(tool, []).append(float(v))
    by_round.setdefault((m, test, rnd), {})[tool] = float(v)
yard = [t for t in tools if t != "turbospark"]
head = "| model | test | " + " | ".join(f"{t} t/s median [min-max]" for t in tools) + " | " + " | ".join(f"vs {t} median [min-max]" for t in yard) + " |"
print()
print(head)
print("|" + "---|" * (2 + len(tools) + len(yard)))
for (m, test), per in data.items():
    med = {t: statistics.median(v) for t, v in per.items()}
    cells = [f"{med[t]:.2f} [{min(per[t]):.2f}-{max(per[t]):.2f}]" if t in per else "-" for t in tools]
    ratios = []
    for t in yard:
        r = [v["turbospark"] / v[t] for (mm, tt, _), v in by_round.items() if (mm, tt) == (m, test) and "turbospark" in v and t in v]
        ratios.append(f"{statistics.median(r):.2f}x [{min(r):.2f}-{max(r):.2f}]" if r else "-")
    print(f"| {os.path.basename(m)} | {test} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
if json_out:
    json.dump({"threads": threads, "load_before": load0, "load_after": load1, "versions": versions,
               "samples": [{"model": m, "round": int(r), "tool": t, "test": test, "tok_s": float(v)} for m, r, t, test, v, _ in rows]},
              open(json_out, "w"), indent=1)
EOF
