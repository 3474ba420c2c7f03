#!/usr/bin/env python3
"""Build a control vector (llama.cpp's format) from two sets of residual captures.

Usage:
  extract_direction.py --positive A.json [A2.json ...] --negative B.json [B2.json ...]
                       -o DIRECTION.gguf [--method mean|pca] [--model-hint ARCH]

Each capture is what `turbospark run|chat|logits --capture-residual FILE.json` writes: a JSON header
(layers, hidden, snapshots, layout "[snapshot][layer][hidden]") and a float32 sidecar. Every
snapshot of the positive files is one example of the property, every snapshot of the negative files
one example without it.

  mean: per layer, mean(positive) - mean(negative)  (difference of means)
  pca:  per layer, the top right-singular vector of the paired differences positive[i] - negative[i]
        (snapshots paired in order), signed to agree with the difference of means and scaled to
        its length, so `--steering FILE:1` moves by about one mean difference either way.

Directions are not normalised. Layer 0 is never written: llama.cpp's convention applies direction.N
after block N and block 0 cannot be steered.
"""
import argparse
import json
import os
import sys

import numpy as np


def load(path):
    with open(path) as f:
        head = json.load(f)
    if head.get("dtype") != "float32" or head.get("layout") != "[snapshot][layer][hidden]":
        sys.exit(f"{path}: not a TurboSpark residual capture")
    side = os.path.join(os.path.dirname(path), head["data"])
    a = np.fromfile(side, dtype=np.float32)
    shape = (head["snapshots"], head["layers"], head["hidden"])
    if a.size != shape[0] * shape[1] * shape[2]:
        sys.exit(f"{side}: holds {a.size} values, the header says {shape}")
    return a.reshape(shape).astype(np.float64)


def stack(paths):
    arrays = [load(p) for p in paths]
    shapes = {a.shape[1:] for a in arrays}
    if len(shapes) != 1:
        sys.exit(f"captures disagree on [layers, hidden]: {sorted(shapes)}")
    return np.concatenate(arrays, axis=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--positive", nargs="+", required=True)
    ap.add_argument("--negative", nargs="+", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--method", choices=["mean", "pca"], default="mean")
    ap.add_argument("--model-hint", default="")
    args = ap.parse_args()

    pos, neg = stack(args.positive), stack(args.negative)
    if pos.shape[1:] != neg.shape[1:]:
        sys.exit(f"positive captures are {pos.shape[1:]}, negative {neg.shape[1:]}")
    mean_diff = pos.mean(axis=0) - neg.mean(axis=0)  # [layers][hidden]
    if args.method == "pca":
        if pos.shape[0] != neg.shape[0]:
            sys.exit(f"pca pairs snapshots: {pos.shape[0]} positive vs {neg.shape[0]} negative")
        diffs = pos - neg
        dirs = np.zeros_like(mean_diff)
        for layer in range(diffs.shape[1]):
            _, _, vt = np.linalg.svd(diffs[:, layer, :], full_matrices=False)
            v = vt[0]
            m = mean_diff[layer]
            if v @ m < 0:
                v = -v
            dirs[layer] = v * np.linalg.norm(m)
    else:
        dirs = mean_diff

    import gguf  # the gguf package from PyPI (llama.cpp's gguf-py)

    out = args.output
    w = gguf.GGUFWriter(out, "controlvector")
    w.add_string("controlvector.model_hint", args.model_hint)
    w.add_int32("controlvector.layer_count", dirs.shape[0] - 1)
    for layer in range(1, dirs.shape[0]):
        w.add_tensor(f"direction.{layer}", dirs[layer].astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out}: {dirs.shape[0] - 1} directions of {dirs.shape[1]} values "
          f"({args.method}, {pos.shape[0]} positive / {neg.shape[0]} negative snapshots)")


if __name__ == "__main__":
    main()
