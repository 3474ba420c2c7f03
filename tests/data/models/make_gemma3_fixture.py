#!/usr/bin/env python3
"""Writes the tiny gemma3 fixtures: gemma3-f32.gguf and gemma3-q8_0.gguf, with 40 token ids each.

Seven layers: layers 0-4 and 6 are local (sliding window 8, shorter than the 40 tokens, so it bites)
and layer 5 is global, as in Gemma 3's 5:1 pattern. The global layers rotate with rope.freq_base
(1e6); the local ones with 10000 in the f32 file (the default when rope.freq_base_swa is absent) and
with rope.freq_base_swa = 20000 in the q8_0 file, so both ways of choosing the local base are checked.

Reference logits: ../../../../shared/tools/np_reference.py NAME.gguf NAME.tokens.txt NAME.ref.logits.f32
(exact float64 from the dequantized weights). Needs numpy and the gguf package.
Usage: make_gemma3_fixture.py OUT_DIR
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

OUT = sys.argv[1]
E, L, H, KV, D, F, V, SWA, N_TOK = 128, 7, 4, 2, 32, 256, 1024, 8, 40


def rn(rng, *shape, std=1.0):
    return (rng.standard_normal(shape) * std).astype(np.float32)


def build(variant, qtype, seed, base_swa):
    rng = np.random.default_rng(seed)
    path = os.path.join(OUT, f"gemma3-{variant}.gguf")
    w = gguf.GGUFWriter(path, "gemma3")
    w.add_name(f"synthetic gemma3 {variant}")
    w.add_context_length(4096)
    w.add_embedding_length(E)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_rope_freq_base(1000000.0)
    if base_swa is not None:
        w.add_float32("gemma3.rope.freq_base_swa", base_swa)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_sliding_window(SWA)
    w.add_vocab_size(V)
    w.add_tokenizer_model("none")

    def put(name, arr, quantize):
        if quantize and qtype != Q.F32:
            w.add_tensor(name, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(name, arr)

    # Norm weights are stored with Gemma's (1 + w) already folded in, as the GGUF converter does.
    put("token_embd.weight", rn(rng, V, E, std=0.1), True)  # tied output head: no output.weight
    put("output_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
    for i in range(L):
        p = f"blk.{i}."
        put(p + "attn_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
        put(p + "attn_q.weight", rn(rng, H * D, E, std=1.0 / np.sqrt(E)), True)
        put(p + "attn_k.weight", rn(rng, KV * D, E, std=1.0 / np.sqrt(E)), True)
        put(p + "attn_v.weight", rn(rng, KV * D, E, std=1.0 / np.sqrt(E)), True)
        put(p + "attn_q_norm.weight", 1.0 + rn(rng, D, std=0.1), False)
        put(p + "attn_k_norm.weight", 1.0 + rn(rng, D, std=0.1), False)
        put(p + "attn_output.weight", rn(rng, E, H * D, std=1.0 / np.sqrt(H * D)), True)
        put(p + "post_attention_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
        put(p + "ffn_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
        put(p + "ffn_gate.weight", rn(rng, F, E, std=1.0 / np.sqrt(E)), True)
        put(p + "ffn_up.weight", rn(rng, F, E, std=1.0 / np.sqrt(E)), True)
        put(p + "ffn_down.weight", rn(rng, E, F, std=1.0 / np.sqrt(F)), True)
        put(p + "post_ffw_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    toks = np.random.default_rng(seed + 7).integers(0, V, size=N_TOK).tolist()
    with open(path[:-5] + ".tokens.txt", "w") as f:
        f.write("\n".join(map(str, toks)) + "\n")
    print(path)


os.makedirs(OUT, exist_ok=True)
build("f32", Q.F32, 3001, None)
build("q8_0", Q.Q8_0, 3002, 20000.0)
