#!/usr/bin/env python3
"""One stream's decode through `turbospark serve` against `turbospark run`: same model, prompt and
threads, greedy, interleaved --reps times (the machine is shared: compare medians).

Two figures per side:
- decode tok/s (wall clock): `run`'s own decode line; the server's from the client (tokens after the
  first over the time after the first). On a machine where other processes compete for the cores,
  this mostly measures how fast the thread pool's threads get the cores back after each wake-up;
- CPU ms per generated token: the process's CPU time for T+1 tokens minus that for 1 token (same
  prompt, so loading and prefill cancel out), i.e. what a token costs whatever the machine's load.
  For the server this counts every thread (HTTP, SSE, scheduler, engine), so it includes the
  server's own overhead.

  bench/serve_vs_run.py MODEL.gguf [--threads 2] [--tokens 128] [--reps 5]
"""
import argparse
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_bench  # noqa: E402

PROMPT = "Once upon a time, in a small village by the river, there lived an old clockmaker who"


def proc_cpu(pid):
    """User + system seconds of a running process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_cli(binary, model, threads, n):
    """(decode tok/s, CPU seconds) of `turbospark run -n N`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([binary, "run", "-m", model, "-p", PROMPT, "-n", str(n), "--temp", "0", "-t", str(threads)],
                       capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"decode \d+ tok, ([0-9.]+) tok/s", r.stderr)
    return float(m.group(1)) if m else None, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def serve_request(url, pid, n):
    """(decode tok/s, CPU seconds of the server) of one streamed request for N tokens."""
    before = proc_cpu(pid)
    r = serve_bench.round_(url, "openai", "", 1, 0, n, 0)
    return r["stream_decode_tok_per_s"] if n > 1 else None, proc_cpu(pid) - before


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--binary", default="build/turbospark")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    serve_bench.FIXED_PROMPT = PROMPT
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([a.binary, "serve", "-m", a.model, "--port", str(port), "-t", str(a.threads),
                               "--parallel", "1", "--quiet"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        serve_request(url, server.pid, 2)  # warm-up: the prompt is cached from here on, for every request
        rows = []
        for rep in range(a.reps):
            run_tps, run_cpu = run_cli(a.binary, a.model, a.threads, a.tokens + 1)
            _, run_cpu1 = run_cli(a.binary, a.model, a.threads, 1)
            srv_tps, srv_cpu = serve_request(url, server.pid, a.tokens + 1)
            _, srv_cpu1 = serve_request(url, server.pid, 1)
            row = {"rep": rep + 1, "run_tok_per_s": run_tps, "serve_tok_per_s": srv_tps,
                   "run_cpu_ms_per_tok": round(1000 * (run_cpu - run_cpu1) / a.tokens, 2),
                   "serve_cpu_ms_per_tok": round(1000 * (srv_cpu - srv_cpu1) / a.tokens, 2)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        server.terminate()
        server.wait()

    def summary(key):
        v = [r[key] for r in rows]
        return statistics.median(v), min(v), max(v)

    for what, unit in (("tok_per_s", "decode tok/s"), ("cpu_ms_per_tok", "CPU ms per token")):
        r, s = summary("run_" + what), summary("serve_" + what)
        print(f"{unit}, median (min..max): run {r[0]:.2f} ({r[1]:.2f}..{r[2]:.2f}), "
              f"serve {s[0]:.2f} ({s[1]:.2f}..{s[2]:.2f}); serve / run = {s[0] / r[0]:.3f}")


if __name__ == "__main__":
    main()
