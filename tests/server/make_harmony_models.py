#!/usr/bin/env python3
"""Synthesized gpt-oss models with the real Harmony vocabulary, for the server tests.

1. harmony-vocab.gguf: o200k_harmony as a GGUF vocabulary (o200k_base.tiktoken ranks as byte-level
   BPE tokens and merges, the Harmony special tokens, the gpt-oss chat template).
2. gpt-oss-random.gguf: `turbospark synth --arch gpt-oss --preset tiny --vocab-from harmony-vocab.gguf`
   (random weights: it writes nonsense, through every real stage).
3. gpt-oss-scripted.gguf: the same model with weights set by hand so that, greedily, it writes a
   Harmony reply of our choosing, which lets the tests check what the server makes of real model
   output (reasoning, answer, tool call):
   - every layer is zero except layer 1's attention, so the residual stream is the token's embedding
     plus what that attention adds;
   - a token of a script has a one-hot embedding and the output head maps it to the next token of
     the script (a bigram table);
   - layer 1's attention adds two "seen" features: the reasoning word (so the second <|channel|> and
     <|message|> of a reply continue with the final answer instead of the analysis again) and the
     word "namespace" of the tool definitions (so a request with tools is answered by a tool call).
   Without tools:  <|channel|>analysis<|message|>Sunny skies<|end|><|start|>assistant<|channel|>final<|message|>Hello there<|return|>
   With tools:      to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>

Usage: make_harmony_models.py TURBOSPARK O200K_TIKTOKEN GPT_OSS_TEMPLATE OUT_DIR
Needs the `gguf` and `numpy` packages (the test venv has them). Files that exist are kept.
"""
import base64
import os
import subprocess
import sys

import numpy as np
import gguf

NAMED_SPECIALS = {199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>", 200003: "<|constrain|>",
                  200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>", 200008: "<|message|>",
                  200012: "<|call|>", 200018: "<|endofprompt|>"}
N_VOCAB = 201088
EMBD = 64


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (byte-level BPE token spelling)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def load_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def merge_parts(ranks, token, max_rank):
    """The two parts BPE joins last to make `token` (merges of lower rank applied first)."""
    parts = [bytes([b]) for b in token]
    while True:
        best, best_rank = None, None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (best_rank is None or r < best_rank):
                best, best_rank = i, r
        if best_rank is None or best_rank >= max_rank:
            return parts
        parts = parts[:best] + [parts[best] + parts[best + 1]] + parts[best + 2:]


def write_vocab(tiktoken_path, template_path, out):
    ranks = load_ranks(tiktoken_path)
    b2u = bytes_to_unicode()
    spell = lambda b: "".join(b2u[x] for x in b)
    tokens = [""] * N_VOCAB
    types = [gguf.TokenType.NORMAL] * N_VOCAB
    merges = []
    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        tokens[rank] = spell(tok)
        if len(tok) > 1:
            parts = merge_parts(ranks, tok, rank)
            assert len(parts) == 2, (tok, parts)
            merges.append(spell(parts[0]) + " " + spell(parts[1]))
    for i in range(len(ranks), N_VOCAB):
        tokens[i] = NAMED_SPECIALS.get(i, f"<|reserved_{i}|>")
        types[i] = gguf.TokenType.CONTROL
    w = gguf.GGUFWriter(out + ".partial", "gpt-oss")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-4o")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(199998)
    w.add_eos_token_id(200002)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    with open(template_path, encoding="utf-8") as f:
        w.add_chat_template(f.read())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(out + ".partial", out)
    return ranks


def q8_0(rows):
    """Float rows -> Q8_0 bytes (per 32 values: f16 scale, 32 int8), as ggml quantizes."""
    rows = np.asarray(rows, dtype=np.float32)
    blocks = rows.reshape(rows.shape[0], -1, 32)
    amax = np.abs(blocks).max(axis=2, keepdims=True)
    d = amax / 127.0
    q = np.where(d > 0, np.round(blocks / np.where(d > 0, d, 1)), 0).astype(np.int8)
    out = np.zeros((rows.shape[0], blocks.shape[1], 34), dtype=np.uint8)
    out[:, :, 0:2] = d.astype(np.float16).view(np.uint8).reshape(rows.shape[0], blocks.shape[1], 2)
    out[:, :, 2:] = q.view(np.uint8)
    return out.reshape(rows.shape[0], -1)


def set_rows(tensor, rows):
    """Writes float rows {row index: vector} into a Q8_0 or F32 tensor of the memory-mapped file."""
    data = tensor.data
    for r, vec in rows.items():
        if tensor.tensor_type == gguf.GGMLQuantizationType.Q8_0:
            data[r] = q8_0([vec])[0]
        elif tensor.tensor_type == gguf.GGMLQuantizationType.F32:
            data[r] = vec
        else:
            raise SystemExit(f"{tensor.name}: unexpected type {tensor.tensor_type.name}")


def script_model(path, ranks):
    special = {v: k for k, v in NAMED_SPECIALS.items()}

    def tok(text):
        if text in special:
            return special[text]
        r = ranks.get(text.encode())
        if r is None:
            raise SystemExit(f"'{text}' is not one o200k token")
        return r

    plain = ["assistant", "<|channel|>", "analysis", "<|message|>", "Sunny", " skies", "<|end|>", "<|start|>",
             "assistant", "<|channel|>", "final", "<|message|>", "Hello", " there", "<|return|>"]
    tools = ["assistant", " to", "=", "functions", ".get", "_weather", "<|channel|>", "comment", "ary", " json",
             "<|message|>", '{"', "city", '":"', "Paris", '"}', "<|call|>"]
    ids = sorted({tok(t) for t in plain + tools + ["namespace"]})
    assert len(set(tools) & set(plain)) == 3 and len(ids) < EMBD - 2
    dim = {t: i for i, t in enumerate(ids)}  # one-hot dimension of each script token
    f_sunny, f_tools = EMBD - 1, EMBD - 2     # residual dimensions of the two "seen" features
    base, step, gain = 4.0, 0.25, 1.0         # a follower that needs its feature starts `step` lower
    onehot = lambda i: np.eye(EMBD, dtype=np.float32)[i]

    # The bigram head. Where a token has two followers (it occurs in both scripts, or twice in the
    # plain one), the one that needs a feature wins only when the feature is present.
    head = {}
    for seq, feature, needs in ((plain, f_sunny, ("final", "Hello")), (tools, f_tools, (" to", "comment", '{"'))):
        for a, b in zip(seq, seq[1:]):
            row = head.setdefault(tok(b), np.zeros(EMBD, dtype=np.float32))
            row[dim[tok(a)]] = base - (step if b in needs else 0)
            if b in needs:
                row[feature] = gain

    r = gguf.GGUFReader(path, "r+")
    t = {x.name: x for x in r.tensors}
    for x in r.tensors:
        x.data[...] = 0
    for name in t:
        if name.endswith("norm.weight"):
            t[name].data[...] = 1.0
        if name.endswith("attn_sinks.weight"):
            t[name].data[...] = -30.0  # no sink
    set_rows(t["token_embd.weight"], {i: onehot(dim[i]) for i in ids})
    set_rows(t["output.weight"], head)
    # Layer 1 (full attention) detects the feature words: q head 0 (kv head 0) looks for "Sunny", q head
    # 2 (kv head 1) for "namespace". The query is a constant (its bias) and only the feature word has a
    # key, in the last rotary pair, whose rotation is negligible at these distances: attention lands on
    # the word wherever it is in the context, and on nothing in particular (values of zero) when it is
    # absent. The value is the word's own dimension (8 after the RMS norm); the output projection puts
    # it, scaled to 1, on the feature dimension.
    hd = 64
    qb = t["blk.1.attn_q.bias"].data
    qb[0 * hd + 31] = qb[2 * hd + 31] = 1.0
    set_rows(t["blk.1.attn_k.weight"], {31: 20 * onehot(dim[tok("Sunny")]), hd + 31: 20 * onehot(dim[tok("namespace")])})
    set_rows(t["blk.1.attn_v.weight"], {0: onehot(dim[tok("Sunny")]), hd: onehot(dim[tok("namespace")])})
    n_in = t["blk.1.attn_output.weight"].data.shape[1] // 34 * 32
    o_sunny, o_tools = np.zeros(n_in, dtype=np.float32), np.zeros(n_in, dtype=np.float32)
    o_sunny[0], o_tools[2 * hd] = 1 / 8, 1 / 8
    set_rows(t["blk.1.attn_output.weight"], {f_sunny: o_sunny, f_tools: o_tools})


def main():
    exe, tiktoken_path, template_path, out_dir = sys.argv[1:5]
    os.makedirs(out_dir, exist_ok=True)
    vocab = os.path.join(out_dir, "harmony-vocab.gguf")
    ranks = load_ranks(tiktoken_path) if os.path.exists(vocab) else write_vocab(tiktoken_path, template_path, vocab)
    random_model = os.path.join(out_dir, "gpt-oss-random.gguf")
    if not os.path.exists(random_model):
        subprocess.run([exe, "synth", "--arch", "gpt-oss", "--preset", "tiny", "--vocab-from", vocab, "-o", random_model],
                       check=True, stderr=subprocess.DEVNULL)
    scripted = os.path.join(out_dir, "gpt-oss-scripted.gguf")
    if not os.path.exists(scripted):
        tmp = scripted + ".partial"
        subprocess.run([exe, "synth", "--arch", "gpt-oss", "--preset", "tiny", "--embd", str(EMBD), "--vocab-from", vocab,
                        "-o", tmp, "--force"], check=True, stderr=subprocess.DEVNULL)
        script_model(tmp, ranks)
        os.replace(tmp, scripted)


if __name__ == "__main__":
    main()
