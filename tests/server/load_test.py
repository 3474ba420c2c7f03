"""A bounded load test on loopback: REQUESTS streamed completions, CONCURRENCY at a time, TOKENS each,
against `turbospark serve --parallel CONCURRENCY` on the default model. Every request must succeed;
prints the aggregate generation throughput and the time to first token."""
import concurrent.futures
import os
import statistics
import time
import unittest

from harness import SANITIZED, Server, client

REQUESTS, CONCURRENCY, TOKENS = (16, 8, 16) if SANITIZED else (64, 16, 64)


class Load(unittest.TestCase):
    def test_load(self):
        with Server("--parallel", str(CONCURRENCY), "--quiet") as s:
            c = client(s, max_retries=0, timeout=600)
            model = c.models.list().data[0].id

            def one(i):
                start = time.time()
                first, tokens, finish = None, 0, None
                for chunk in c.completions.create(model=model, prompt=f"Story number {i}: once upon a time", max_tokens=TOKENS,
                                                  temperature=0.8, seed=i, stream=True, stream_options={"include_usage": True}):
                    if chunk.usage:
                        tokens = chunk.usage.completion_tokens
                    for ch in chunk.choices:
                        if ch.text and first is None:
                            first = time.time() - start
                        finish = ch.finish_reason or finish
                return first, tokens, finish

            start = time.time()
            with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
                results = list(pool.map(one, range(REQUESTS)))
            wall = time.time() - start
            total = sum(r[1] for r in results)
            ttft = sorted(r[0] for r in results if r[0] is not None)
            self.assertEqual(len(results), REQUESTS)
            for first, tokens, finish in results:
                self.assertIn(finish, ("length", "stop"))
                self.assertGreater(tokens, 0)
                self.assertLessEqual(tokens, TOKENS)
            # A request is counted when the server has finished writing it, which can be just after the
            # client read its last chunk: the counters must settle within a few seconds, and exactly.
            key = 'turbospark_requests_total{endpoint="/v1/completions",status="200"}'
            deadline = time.time() + 10
            m = s.metrics()
            while (m.get(key) != REQUESTS or m["turbospark_active_sequences"] != 0) and time.time() < deadline:
                time.sleep(0.05)
                m = s.metrics()
            self.assertEqual(m.get(key), REQUESTS)
            self.assertEqual(m["turbospark_active_sequences"], 0)
            print(f"\nload: {REQUESTS} requests, {CONCURRENCY} at a time, up to {TOKENS} tokens each: {total} tokens in "
                  f"{wall:.1f} s = {total / wall:.1f} tok/s aggregate; time to first token median {statistics.median(ttft):.2f} s, "
                  f"max {ttft[-1]:.2f} s; {int(m['turbospark_forward_steps_total'])} forward steps")


if __name__ == "__main__":
    unittest.main()
