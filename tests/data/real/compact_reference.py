#!/usr/bin/env python3
"""Compacts exact reference logits of the real models into what tests/e2e/real_model_test.cpp reads.

Usage: compact_reference.py CASES.json OUT.bin REF0.f32 REF1.f32 ...
REFi.f32 holds float32 logits [n][vocab] of case i's prompt_ids + greedy_ids[:-1], computed in float64
by ../shared/tools/np_reference.py (run once per case). Only the rows that predict the greedy tokens
are kept, and of each row only the K largest logits plus the log-sum-exp of all the others: enough to
compute KL(reference || ours) over K + 1 bins (a lower bound of the full KL that is still exact to
second order), in 50 KB instead of 50 MB.

Format, little-endian: int32 K, int32 n_rows; then per row int32 case, int32 row (in that case's
sequence), float64 logsumexp of the logits outside the top K, K x int32 ids (descending logit), K x
float32 logits.
"""
import json
import struct
import sys

import numpy as np

K = 32
cases = json.load(open(sys.argv[1]))["cases"]
out_path, refs = sys.argv[2], sys.argv[3:]
assert len(refs) == len(cases), "one reference file per case"
rows = []
for ci, (case, ref) in enumerate(zip(cases, refs)):
    n = len(case["prompt_ids"]) + len(case["greedy_ids"]) - 1
    logits = np.fromfile(ref, dtype=np.float32)
    vocab = logits.size // n
    assert vocab * n == logits.size, ref
    logits = logits.reshape(n, vocab)
    for r in range(len(case["prompt_ids"]) - 1, n):
        row = logits[r].astype(np.float64)
        top = np.argsort(-row, kind="stable")[:K]
        rest = np.delete(row, top)
        m = rest.max()
        lse_rest = m + np.log(np.exp(rest - m).sum())
        rows.append((ci, r, lse_rest, top.astype(np.int32), logits[r][top].astype(np.float32)))
with open(out_path, "wb") as f:
    f.write(struct.pack("<ii", K, len(rows)))
    for ci, r, lse_rest, ids, vals in rows:
        f.write(struct.pack("<iid", ci, r, lse_rest))
        f.write(ids.astype("<i4").tobytes())
        f.write(vals.astype("<f4").tobytes())
print(f"{out_path}: {len(rows)} rows, top {K}")
