#!/usr/bin/env python3
"""Writes reference-decode test vectors for tests/quant: random blocks of every supported format with
the values gguf-py decodes them to. Scale fields are overwritten with bounded finite values so the
comparison means something (random fp16 bits would be inf/NaN or 1e-7 too often).

File layout (<TYPE>.bin, little-endian): u32 ggml type, u32 element count n, the raw blocks, then n
float32 expected values. Run from any directory: python3 gen_vectors.py
"""
import os
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20240611)


def f16_bytes(values):
    return np.asarray(values, dtype=np.float16).view(np.uint8)


def random_scales(n, lo, hi, signed):
    v = rng.uniform(lo, hi, n)
    if signed:
        v *= rng.choice([-1.0, 1.0], n)
    return f16_bytes(v)


# (type, block elements, block bytes, blocks, [(byte offset of an f16 scale field, signed)])
FORMATS = [
    (T.Q4_0, 32, 18, 16, [(0, True)]),
    (T.Q4_1, 32, 20, 16, [(0, True), (2, True)]),
    (T.Q5_0, 32, 22, 16, [(0, True)]),
    (T.Q5_1, 32, 24, 16, [(0, True), (2, True)]),
    (T.Q8_0, 32, 34, 16, [(0, True)]),
    (T.MXFP4, 32, 17, 16, []),
    (T.Q4_K, 256, 144, 4, [(0, False), (2, False)]),
    (T.Q5_K, 256, 176, 4, [(0, False), (2, False)]),
    (T.Q6_K, 256, 210, 4, [(208, True)]),
]


def write(qtype, n, raw):
    expected = dequantize(raw, qtype).astype(np.float32).reshape(-1)
    assert expected.size == n and np.all(np.isfinite(expected)), qtype.name
    with open(os.path.join(HERE, f"{qtype.name}.bin"), "wb") as f:
        f.write(struct.pack("<II", int(qtype), n))
        f.write(raw.tobytes())
        f.write(expected.tobytes())


for qtype, be, bb, nblocks, scales in FORMATS:
    raw = rng.integers(0, 256, (nblocks, bb), dtype=np.uint8)
    for off, signed in scales:
        raw[:, off:off + 2] = random_scales(nblocks, 1e-3, 2.0, signed).reshape(nblocks, 2)
    if qtype == T.MXFP4:  # exponents around 1, plus the subnormal and largest-finite edge cases
        raw[:, 0] = rng.integers(110, 140, nblocks)
        raw[0, 0], raw[1, 0], raw[2, 0] = 0, 1, 2
    write(qtype, nblocks * be, raw)

# Plain formats: every finite bit pattern class (normals, subnormals, signed zeros) at random.
n = 512
halves = rng.integers(0, 1 << 16, n, dtype=np.uint16)
halves[(halves & 0x7C00) == 0x7C00] &= 0xBFFF  # no inf/NaN: exponent all-ones -> all-but-top
halves[:4] = [0x0000, 0x8000, 0x0001, 0x83FF]
write(T.F16, n, halves.view(np.uint8))
bf = rng.integers(0, 1 << 16, n, dtype=np.uint16)
bf[(bf & 0x7F80) == 0x7F80] &= 0xBFFF
bf[:3] = [0x0000, 0x8000, 0x0001]
write(T.BF16, n, bf.view(np.uint8))
write(T.F32, n, rng.standard_normal(n).astype(np.float32).view(np.uint8))
