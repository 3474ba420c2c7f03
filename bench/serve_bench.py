#!/usr/bin/env python3
"""Aggregate decode throughput and time to first token of an OpenAI-compatible server at several
numbers of concurrent streams (standard library only, so it measures any server the same way).

Each round sends N streamed /v1/completions requests at once, every one with its own prompt, greedy,
`ignore_eos` (llama-server's extension; TurboSpark honours it too) so that each generates exactly
--tokens tokens. Reported per N: aggregate tok/s = all generated tokens / round wall time, the median
time to first token, and one stream's own decode speed (tokens after the first / time after the
first). Prints one JSON line per round.

  serve_bench.py --url http://127.0.0.1:8080 --streams 1,4,16 --tokens 64
"""
import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse

WORDS = ("river mountain forest ocean desert valley island glacier canyon meadow harbor village castle bridge "
         "lantern compass journey winter summer autumn spring thunder whisper shadow").split()


FIXED_PROMPT = None  # --prompt: every request asks this


def prompt(i, words):
    if FIXED_PROMPT is not None:
        return FIXED_PROMPT
    # Distinct from the first word on, so that no request can reuse another's cached prompt.
    return f"Story {i}: " + " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(words))


def one(url, api, model, i, words, tokens, ban, out):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    if api == "openai":
        path, body = "/v1/completions", {"prompt": prompt(i, words), "max_tokens": tokens}
    else:  # llama-server's native endpoint
        path, body = "/completion", {"prompt": prompt(i, words), "n_predict": tokens}
    body.update({"temperature": 0, "stream": True, "ignore_eos": True})
    if ban:  # tokens never to generate, the same way for both servers
        body["logit_bias"] = {str(t): -100 for t in ban} if api == "openai" else [[t, False] for t in ban]
    if model:
        body["model"] = model
    start = time.perf_counter()
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]}")
    first, chunks, finish = None, 0, None
    for line in r:
        line = line.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if "error" in ev:
            raise RuntimeError(f"request {i}: {ev['error']}")
        # OpenAI: {"choices": [{"text", "finish_reason"}]}; llama-server native: {"content", "stop", "stop_type"}.
        pieces = [(ch.get("text"), ch.get("finish_reason")) for ch in ev.get("choices", [])]
        if "content" in ev:
            pieces.append((ev["content"], "length" if ev.get("stop_type") == "limit" else ev.get("stop_type") if ev.get("stop") else None))
        for text, fin in pieces:
            if text:
                chunks += 1
                if first is None:
                    first = time.perf_counter() - start
            finish = fin or finish
    out[i] = (start, time.perf_counter(), first, chunks, finish)
    conn.close()


def round_(url, api, model, n, words, tokens, offset, ban=()):
    out = {}
    threads = [threading.Thread(target=one, args=(url, api, model, offset + i, words, tokens, ban, out)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(out) != n:
        raise RuntimeError(f"{n - len(out)} of {n} requests failed")
    begin = min(v[0] for v in out.values())
    end = max(v[1] for v in out.values())
    for v in out.values():
        if v[4] != "length":
            raise RuntimeError(f"a request ended with {v[4]!r}, not 'length': is ignore_eos honoured?")
    total = n * tokens
    return {"streams": n, "tokens": total, "seconds": round(end - begin, 3), "tok_per_s": round(total / (end - begin), 2),
            "ttft_median_s": round(statistics.median(v[2] for v in out.values()), 3),
            "ttft_max_s": round(max(v[2] for v in out.values()), 3),
            # One stream's own decode speed: tokens after the first over the time after the first.
            "stream_decode_tok_per_s": round(statistics.median((tokens - 1) / (v[1] - v[0] - v[2]) for v in out.values()), 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="")
    ap.add_argument("--api", choices=("openai", "llama"), default="openai", help="llama: llama-server's native /completion")
    ap.add_argument("--streams", default="1,4,16")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=24)
    ap.add_argument("--label", default="")
    ap.add_argument("--prompt", help="one prompt for every request (default: a distinct one each)")
    ap.add_argument("--ban", default="", help="token ids never to generate, e.g. 3-258 (a random-weight model's byte "
                    "tokens, whose invalid UTF-8 llama-server's output parser rejects)")
    ap.add_argument("--warmup", action="store_true", help="one untimed request first")
    a = ap.parse_args()
    global FIXED_PROMPT
    FIXED_PROMPT = a.prompt
    ban = []
    for part in filter(None, a.ban.split(",")):
        lo, _, hi = part.partition("-")
        ban += range(int(lo), int(hi or lo) + 1)
    if a.warmup:
        round_(a.url, a.api, a.model, 1, a.prompt_words, 4, 10_000, ban)
    for k, n in enumerate(int(x) for x in a.streams.split(",")):
        r = round_(a.url, a.api, a.model, n, a.prompt_words, a.tokens, 1000 * (k + 1), ban)
        r["label"] = a.label
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
