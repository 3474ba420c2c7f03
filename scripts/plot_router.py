#!/usr/bin/env python3
"""Plots a router histogram written by `turbospark ... --router-hist FILE.json [--router-trace]`.

  python3 scripts/plot_router.py FILE.json [--out PREFIX] [--turbospark build/turbospark]

Writes PREFIX-heatmap.png: how often each expert was selected, per layer (each row normalised to
its layer's share, so a uniform router is one flat colour). With a trace, also writes
PREFIX-hitrate.png: the hit rate of a streamed expert cache per cache size (slots per layer) for
the LFU and LRU policies, from `turbospark router-replay`, which replays the engine's own slot
planner over the trace (so the curve is the engine's, not a re-implementation's).

Needs matplotlib (pip install matplotlib).
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hist", help="JSON from --router-hist (with --router-trace for the hit-rate curve)")
    ap.add_argument("--out", help="output prefix (default: the input without .json)")
    ap.add_argument("--turbospark", default=os.environ.get("TURBOSPARK", "build/turbospark"),
                    help="the turbospark binary, for the planner replay (default: $TURBOSPARK or build/turbospark)")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_router.py needs matplotlib: pip install matplotlib")

    with open(args.hist) as f:
        h = json.load(f)
    prefix = args.out or (args.hist[:-5] if args.hist.endswith(".json") else args.hist)
    counts = h["counts"]
    layers, experts, k = h["num_layers"], h["num_experts"], h["top_k"]
    shares = []
    for row in counts:
        total = sum(row)
        shares.append([c / total if total else 0.0 for c in row])

    fig, ax = plt.subplots(figsize=(max(6, experts * 0.22), max(3, layers * 0.25)))
    im = ax.imshow(shares, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_xlabel("expert")
    ax.set_ylabel("layer")
    ax.set_title(f"router selections per layer ({h.get('tokens', '?')} tokens, top-{k}; uniform = {1 / experts:.3f})")
    fig.colorbar(im, ax=ax, label="share of the layer's selections")
    fig.tight_layout()
    fig.savefig(prefix + "-heatmap.png", dpi=120)
    print(prefix + "-heatmap.png")

    if "trace" not in h:
        print("no trace in the histogram (record with --router-trace): hit-rate curve skipped", file=sys.stderr)
        return
    out = subprocess.run([args.turbospark, "router-replay", args.hist], check=True, capture_output=True, text=True)
    r = json.loads(out.stdout)
    fig, ax = plt.subplots(figsize=(6, 4))
    for pol, style in (("lfu", "o-"), ("lru", "s--")):
        if pol in r:
            ax.plot(r["slots"], [100 * x for x in r[pol]], style, label=pol.upper())
    ax.axvline(k, color="grey", linewidth=0.8, linestyle=":", label=f"top-k = {k}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("cache slots per layer")
    ax.set_ylabel("hit rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"expert cache hit rate, planner replayed over {r['tokens']} tokens")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(prefix + "-hitrate.png", dpi=120)
    print(prefix + "-hitrate.png")


if __name__ == "__main__":
    main()
