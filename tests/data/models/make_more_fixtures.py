#!/usr/bin/env python3
"""Writes the fixtures that ../shared does not have, each with 40 token ids:

- gemma3-f32, gemma3-q8_0: seven layers, 0-4 and 6 local (sliding window 8, shorter than the 40
  tokens, so it bites) and 5 global, as in Gemma 3's 5:1 pattern. Global layers rotate with
  rope.freq_base (1e6); local ones with 10000 in the f32 file (the default when rope.freq_base_swa is
  absent) and with rope.freq_base_swa = 20000 in the q8_0 file, so both ways of choosing it are checked.
- gemma3-linear-q8_0: gemma3-q8_0's shape with rope.scaling.type = linear, factor 8 (Gemma 3 4B and
  larger): it stretches the global layers only.
- llama-linear-q8_0: llama-dense's shape with linear RoPE scaling, factor 4 (all layers).
- llama-ropefreqs-q8_0: llama-dense's shape with Llama 3.1's rope_freqs.weight (each frequency
  divided by its factor, 1 for high frequencies up to 8 for low ones).

Reference logits, exact float64 from the dequantized weights:
  np_reference.py NAME.gguf NAME.tokens.txt NAME.ref.logits.f32
with ../shared/tools/np_reference.py for the first two, and for the linear / rope_freqs ones a copy
patched to divide positions by the linear factor (global layers only for gemma3) and each
frequency by rope_freqs[i], as llama.cpp does. Needs numpy and the gguf package.
Usage: make_more_fixtures.py OUT_DIR
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

OUT = sys.argv[1]
V, N_TOK = 1024, 40


def rn(rng, *shape, std=1.0):
    return (rng.standard_normal(shape) * std).astype(np.float32)


class Writer:
    def __init__(self, name, arch, qtype, s, base, eps, linear):
        self.path = os.path.join(OUT, name + ".gguf")
        self.qtype = qtype
        w = self.w = gguf.GGUFWriter(self.path, arch)
        w.add_name(f"synthetic {name}")
        w.add_context_length(4096)
        w.add_embedding_length(s["E"])
        w.add_block_count(s["L"])
        w.add_feed_forward_length(s["F"])
        w.add_head_count(s["H"])
        w.add_head_count_kv(s["KV"])
        w.add_key_length(s["D"])
        w.add_value_length(s["D"])
        w.add_rope_dimension_count(s["D"])
        w.add_vocab_size(V)
        w.add_tokenizer_model("none")
        w.add_rope_freq_base(base)
        w.add_layer_norm_rms_eps(eps)
        if linear is not None:
            w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
            w.add_rope_scaling_factor(linear)

    def put(self, name, arr, quantize=True):
        if quantize and self.qtype != Q.F32:
            self.w.add_tensor(name, gguf.quants.quantize(arr, self.qtype), raw_dtype=self.qtype)
        else:
            self.w.add_tensor(name, arr)

    def attention_inputs(self, rng, p, s):
        E, H, KV, D = s["E"], s["H"], s["KV"], s["D"]
        self.put(p + "attn_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
        self.put(p + "attn_q.weight", rn(rng, H * D, E, std=1.0 / np.sqrt(E)))
        self.put(p + "attn_k.weight", rn(rng, KV * D, E, std=1.0 / np.sqrt(E)))
        self.put(p + "attn_v.weight", rn(rng, KV * D, E, std=1.0 / np.sqrt(E)))

    def close(self, seed):
        self.w.write_header_to_file()
        self.w.write_kv_data_to_file()
        self.w.write_tensors_to_file()
        self.w.close()
        toks = np.random.default_rng(seed + 7).integers(0, V, size=N_TOK).tolist()
        with open(self.path[:-5] + ".tokens.txt", "w") as f:
            f.write("\n".join(map(str, toks)) + "\n")
        print(self.path)


def shape(L):
    s = dict(E=128, L=L, H=4, KV=2, D=32, F=256)
    return s, (s["E"], s["L"], s["H"], s["KV"], s["D"], s["F"])


def gemma3(name, qtype, seed, base_swa=None, linear=None):
    s, (E, L, H, KV, D, F) = shape(7)
    rng = np.random.default_rng(seed)
    x = Writer(name, "gemma3", qtype, s, 1000000.0, 1e-6, linear)
    if base_swa is not None:
        x.w.add_float32("gemma3.rope.freq_base_swa", base_swa)
    x.w.add_sliding_window(8)
    # Norm weights are stored with Gemma's (1 + w) already folded in, as the GGUF converter does.
    x.put("token_embd.weight", rn(rng, V, E, std=0.1))  # tied output head: no output.weight
    x.put("output_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
    for i in range(L):
        p = f"blk.{i}."
        x.attention_inputs(rng, p, s)
        x.put(p + "attn_q_norm.weight", 1.0 + rn(rng, D, std=0.1), False)
        x.put(p + "attn_k_norm.weight", 1.0 + rn(rng, D, std=0.1), False)
        x.put(p + "attn_output.weight", rn(rng, E, H * D, std=1.0 / np.sqrt(H * D)))
        x.put(p + "post_attention_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
        x.put(p + "ffn_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
        x.put(p + "ffn_gate.weight", rn(rng, F, E, std=1.0 / np.sqrt(E)))
        x.put(p + "ffn_up.weight", rn(rng, F, E, std=1.0 / np.sqrt(E)))
        x.put(p + "ffn_down.weight", rn(rng, E, F, std=1.0 / np.sqrt(F)))
        x.put(p + "post_ffw_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
    x.close(seed)


def llama(name, qtype, seed, linear=None, rope_freqs=False):
    s, (E, L, H, KV, D, F) = shape(3)
    rng = np.random.default_rng(seed)
    x = Writer(name, "llama", qtype, s, 10000.0, 1e-5, linear)
    x.put("token_embd.weight", rn(rng, V, E))
    x.put("output_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
    x.put("output.weight", rn(rng, V, E, std=1.0 / np.sqrt(E)))
    if rope_freqs:
        # Llama 3.1's shape: factor 1 for the high frequencies, 8 for the low, a smooth ramp between.
        x.put("rope_freqs.weight", np.interp(np.arange(D // 2), [0, 6, 11, D // 2 - 1], [1, 1, 8, 8]).astype(np.float32), False)
    for i in range(L):
        p = f"blk.{i}."
        x.attention_inputs(rng, p, s)
        x.put(p + "attn_output.weight", rn(rng, E, H * D, std=1.0 / np.sqrt(H * D)))
        x.put(p + "ffn_norm.weight", 1.0 + rn(rng, E, std=0.1), False)
        x.put(p + "ffn_gate.weight", rn(rng, F, E, std=1.0 / np.sqrt(E)))
        x.put(p + "ffn_up.weight", rn(rng, F, E, std=1.0 / np.sqrt(E)))
        x.put(p + "ffn_down.weight", rn(rng, E, F, std=1.0 / np.sqrt(F)))
    x.close(seed)


os.makedirs(OUT, exist_ok=True)
gemma3("gemma3-f32", Q.F32, 3001)
gemma3("gemma3-q8_0", Q.Q8_0, 3002, base_swa=20000.0)
gemma3("gemma3-linear-q8_0", Q.Q8_0, 3003, linear=8.0)
llama("llama-linear-q8_0", Q.Q8_0, 3004, linear=4.0)
llama("llama-ropefreqs-q8_0", Q.Q8_0, 3005, rope_freqs=True)
