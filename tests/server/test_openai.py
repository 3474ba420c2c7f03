"""`turbospark serve` with the official `openai` client, on the default model (SmolLM2-135M-Instruct):
chat and completions, whole and streamed, the same text as `turbospark run`, seeds, log-probabilities,
stop strings, prefix reuse, 8 concurrent clients getting what they get alone, cancellation mid-stream,
every kind of bad request answered with the right status in OpenAI's error shape, and a steered
server."""
import concurrent.futures
import json
import os
import re
import socket
import subprocess
import time
import unittest

import openai

from harness import BINARY, SANITIZED, TEST_DATA, Server, client, run_cli

QUESTION = "Name three rivers."
N = 8 if SANITIZED else 24  # tokens per reply


def chat(c, model, content, stream=False, **kw):
    """The reply's text and finish reason (and the usage when there is one)."""
    msgs = [{"role": "user", "content": content}]
    if not stream:
        r = c.chat.completions.create(model=model, messages=msgs, **kw)
        return r.choices[0].message.content, r.choices[0].finish_reason, r.usage
    text, finish, usage = "", None, None
    for chunk in c.chat.completions.create(model=model, messages=msgs, stream=True, stream_options={"include_usage": True}, **kw):
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            text += ch.delta.content or ""
            finish = ch.finish_reason or finish
    return text, finish, usage


class OpenAIClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--parallel", "8").__enter__()
        cls.c = client(cls.server)
        cls.model = cls.c.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_health_models_and_page(self):
        self.assertEqual(self.server.get("/health"), (200, '{"status":"ok"}'))
        self.assertTrue(self.model.startswith("SmolLM2"))
        self.assertEqual(self.c.models.retrieve(self.model).id, self.model)
        status, page = self.server.get("/")
        self.assertEqual(status, 200)
        self.assertIn("<html", page)

    def test_chat_is_what_run_prints(self):
        text, finish, usage = chat(self.c, self.model, QUESTION, temperature=0, max_tokens=N)
        expected = run_cli("run", "--chat", "-p", QUESTION, "--temp", "0", "-n", str(N), "-t", "2")
        self.assertEqual(text + "\n", expected)
        self.assertEqual(finish, "length")
        self.assertEqual(usage.completion_tokens, N)
        self.assertGreater(usage.prompt_tokens, 10)
        self.assertEqual(usage.total_tokens, usage.prompt_tokens + N)

    def test_streamed_chat_is_the_same_text(self):
        whole, _, _ = chat(self.c, self.model, QUESTION, temperature=0, max_tokens=N)
        streamed, finish, usage = chat(self.c, self.model, QUESTION, stream=True, temperature=0, max_tokens=N)
        self.assertEqual(streamed, whole)
        self.assertEqual(finish, "length")
        self.assertEqual(usage.completion_tokens, N)

    def test_completions_text_and_token_ids(self):
        prompt = "The capital of France is"
        expected = run_cli("run", "-p", prompt, "--temp", "0", "-n", str(N), "-t", "2")
        r = self.c.completions.create(model=self.model, prompt=prompt, temperature=0, max_tokens=N)
        self.assertEqual(r.choices[0].text + "\n", expected)
        self.assertEqual(r.object, "text_completion")
        streamed = "".join(ch.choices[0].text for ch in self.c.completions.create(
            model=self.model, prompt=prompt, temperature=0, max_tokens=N, stream=True) if ch.choices)
        self.assertEqual(streamed, r.choices[0].text)
        # The same prompt as token ids.
        status, tok = self.server.post("/tokenize", {"content": prompt, "add_special": True})
        self.assertEqual(status, 200)
        self.assertEqual(self.server.post("/detokenize", {"tokens": tok["tokens"]}), (200, {"content": prompt}))
        by_ids = self.c.completions.create(model=self.model, prompt=tok["tokens"], temperature=0, max_tokens=N)
        self.assertEqual(by_ids.choices[0].text, r.choices[0].text)
        self.assertEqual(by_ids.usage.prompt_tokens, len(tok["tokens"]))

    def test_seeded_sampling_is_reproducible(self):
        a = chat(self.c, self.model, QUESTION, temperature=0.9, seed=1234, max_tokens=N)[0]
        b = chat(self.c, self.model, QUESTION, temperature=0.9, seed=1234, max_tokens=N)[0]
        self.assertEqual(a, b)
        expected = run_cli("run", "--chat", "-p", QUESTION, "--temp", "0.9", "--seed", "1234", "-n", str(N), "-t", "2")
        self.assertEqual(a + "\n", expected)

    def test_logprobs(self):
        r = self.c.chat.completions.create(model=self.model, messages=[{"role": "user", "content": QUESTION}],
                                           temperature=0, max_tokens=6, logprobs=True, top_logprobs=3)
        lp = r.choices[0].logprobs.content
        self.assertEqual(len(lp), 6)
        for t in lp:
            self.assertLessEqual(t.logprob, 0)
            self.assertEqual(len(t.top_logprobs), 3)
            self.assertEqual(t.top_logprobs[0].token, t.token)  # greedy: the chosen token is the best
            self.assertGreaterEqual(t.top_logprobs[0].logprob, t.top_logprobs[1].logprob)
        self.assertEqual("".join(t.token for t in lp), r.choices[0].message.content)

    def test_logit_bias_bans_and_forces_tokens(self):
        text, _, _ = chat(self.c, self.model, QUESTION, temperature=0, max_tokens=4)
        first = self.server.post("/tokenize", {"content": text})[1]["tokens"][0]
        banned = chat(self.c, self.model, QUESTION, temperature=0, max_tokens=4, logit_bias={str(first): -100})[0]
        self.assertNotEqual(self.server.post("/tokenize", {"content": banned})[1]["tokens"][0], first)
        river = self.server.post("/tokenize", {"content": " river"})[1]["tokens"]
        self.assertEqual(len(river), 1)
        forced = chat(self.c, self.model, QUESTION, temperature=0.8, max_tokens=4, logit_bias={str(river[0]): 100})[0]
        self.assertEqual(forced, " river" * 4)

    def test_stop_string_cuts_the_text(self):
        text = chat(self.c, self.model, QUESTION, temperature=0, max_tokens=N)[0]
        word = text.split()[2]
        cut, finish, _ = chat(self.c, self.model, QUESTION, temperature=0, max_tokens=N, stop=[word])
        self.assertEqual(cut, text[:text.index(word)])
        self.assertEqual(finish, "stop")
        streamed, finish, _ = chat(self.c, self.model, QUESTION, stream=True, temperature=0, max_tokens=N, stop=word)
        self.assertEqual((streamed, finish), (cut, "stop"))

    def test_next_turn_reuses_the_cached_prefix(self):
        msgs = [{"role": "user", "content": "Tell me about the sea."}]
        first = self.c.chat.completions.create(model=self.model, messages=msgs, temperature=0, max_tokens=N)
        msgs += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "And rivers?"}]
        second = self.c.chat.completions.create(model=self.model, messages=msgs, temperature=0, max_tokens=4)
        cached = second.usage.prompt_tokens_details.cached_tokens
        self.assertGreaterEqual(cached, first.usage.prompt_tokens)
        self.assertLess(cached, second.usage.prompt_tokens)

    def test_eight_concurrent_clients_get_what_they_get_alone(self):
        requests = [dict(content=f"Write a sentence about the number {i}.", temperature=0 if i % 2 else 0.8, seed=100 + i,
                         max_tokens=N) for i in range(8)]
        alone = [chat(self.c, self.model, **r)[0] for r in requests]
        steps_before = self.server.metrics()["turbospark_forward_steps_total"]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            together = list(pool.map(lambda r: chat(client(self.server), self.model, stream=True, **r)[0], requests))
        self.assertEqual(together, alone)
        steps = self.server.metrics()["turbospark_forward_steps_total"] - steps_before
        self.assertLess(steps, 8 * N, "the requests did not share forward calls")


class Cancellation(unittest.TestCase):
    def test_closing_a_stream_cancels_it_and_frees_its_cache(self):
        with Server("--parallel", "2") as s:
            c = client(s)
            model = c.models.list().data[0].id
            stream = c.chat.completions.create(model=model, messages=[{"role": "user", "content": "Count to a thousand."}],
                                               max_tokens=3000, temperature=0.7, seed=5, stream=True,
                                               extra_body={"ignore_eos": True})  # only the close may end it
            received = 0
            for chunk in stream:
                received += 1
                if received == 4:
                    break
            self.assertGreater(s.metrics()["turbospark_kv_cache_bytes"], 0)
            self.assertEqual(s.metrics()["turbospark_active_sequences"], 1)
            stream.close()
            s.wait_metric("turbospark_requests_cancelled_total", lambda v: v == 1)
            m = s.metrics()
            self.assertEqual(m["turbospark_active_sequences"], 0)
            self.assertEqual(m["turbospark_kv_cache_bytes"], 0)
            self.assertLess(m["turbospark_generated_tokens_total"], 1000)
            # The server goes on serving.
            text, finish, _ = chat(c, model, QUESTION, temperature=0, max_tokens=4)
            self.assertEqual(finish, "length")


class BadRequests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--parallel", "1", "--ctx", "256", "--max-body", "100000", "--max-tokens", "100").__enter__()
        cls.c = client(cls.server, max_retries=0)
        cls.model = cls.c.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def assert_error(self, status, body, code, param=None):
        self.assertEqual(status, code, body)
        err = body["error"]
        self.assertEqual(err["type"], "invalid_request_error")
        self.assertTrue(err["message"])
        if param:
            self.assertEqual(err["param"], param)

    def test_malformed_json(self):
        self.assert_error(*self.server.post("/v1/chat/completions", b'{"messages": [}'), 400)
        self.assert_error(*self.server.post("/v1/chat/completions", b'[1, 2]'), 400)
        self.assert_error(*self.server.post("/v1/completions", b'[' * 100000), 400)

    def test_wrong_types_and_values_name_the_parameter(self):
        msgs = [{"role": "user", "content": "hi"}]
        for kw, param in [(dict(temperature="hot"), "temperature"), (dict(temperature=5), "temperature"),
                          (dict(max_tokens=0), "max_tokens"), (dict(max_tokens=101), "max_tokens"),
                          (dict(top_p=0), "top_p"), (dict(n=2), "n"), (dict(stop=[1]), "stop"),
                          (dict(seed="x"), "seed"), (dict(tools=[{"type": "function", "function": {"name": "f"}}]), "tools"),
                          (dict(top_logprobs=2), "top_logprobs"), (dict(logit_bias={"abc": 1}), "logit_bias"),
                          (dict(logit_bias={"5": 101}), "logit_bias")]:
            with self.assertRaises(openai.BadRequestError, msg=str(kw)) as e:
                self.c.chat.completions.create(model=self.model, messages=msgs, **kw)
            self.assertEqual(e.exception.status_code, 400)
            self.assertEqual(e.exception.param, param, str(kw))
        with self.assertRaises(openai.BadRequestError) as e:
            self.c.chat.completions.create(model=self.model, messages=[{"role": "robot", "content": "hi"}])
        self.assertEqual(e.exception.param, "messages[0].role")
        with self.assertRaises(openai.BadRequestError) as e:
            self.c.completions.create(model=self.model, prompt=[10 ** 9])
        self.assertEqual(e.exception.param, "prompt")

    def test_prompt_longer_than_the_context(self):
        with self.assertRaises(openai.BadRequestError) as e:
            self.c.completions.create(model=self.model, prompt="word " * 400)
        self.assertEqual(e.exception.code, "context_length_exceeded")

    def test_full_context_ends_with_length(self):
        r = self.c.completions.create(model=self.model, prompt="word " * 200, max_tokens=100, temperature=0)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertEqual(r.usage.prompt_tokens + r.usage.completion_tokens, 257)  # the last sampled token needs no room

    def test_oversized_body(self):
        body = json.dumps({"model": self.model, "prompt": "x" * 200000}).encode()
        self.assert_error(*self.server.post("/v1/completions", body), 413)

    def test_unknown_model_and_path(self):
        with self.assertRaises(openai.NotFoundError) as e:
            self.c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        self.assertEqual(e.exception.code, "model_not_found")
        status, text = self.server.get("/v1/nothing")
        self.assert_error(status, json.loads(text), 404)
        self.assertEqual(self.server.get("/v1/models/gpt-4o")[0], 404)

    def test_a_slow_client_cannot_hold_a_connection(self):
        with Server("--timeout", "1") as s:
            sock = socket.create_connection(("127.0.0.1", s.port))
            start = time.time()
            request = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
            try:
                for byte in request + b"x" * 1000:
                    sock.sendall(bytes([byte]))
                    time.sleep(0.05)
                    if time.time() - start > 10:
                        break
            except OSError:
                pass  # the server closed the connection
            sock.settimeout(5)
            try:
                answer = sock.recv(4096)
            except OSError:
                answer = b""
            sock.close()
            self.assertLess(time.time() - start, 5)
            self.assertTrue(answer == b"" or b" 400 " in answer.split(b"\r\n")[0], answer)
            self.assertEqual(s.get("/health")[0], 200)


class Limits(unittest.TestCase):
    def test_api_key(self):
        with Server("--api-key", "sesame") as s:
            with self.assertRaises(openai.AuthenticationError) as e:
                client(s, api_key="wrong", max_retries=0).models.list()
            self.assertEqual(e.exception.code, "invalid_api_key")
            status, body = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})  # no key
            self.assertEqual((status, body["error"]["code"]), (401, "invalid_api_key"))
            self.assertEqual(s.get("/metrics")[0], 401)
            self.assertEqual(s.get("/health")[0], 200)
            self.assertEqual(s.get("/")[0], 200)
            good = client(s, api_key="sesame")
            model = good.models.list().data[0].id
            self.assertEqual(chat(good, model, "hi", max_tokens=2)[1], "length")

    def test_full_queue_answers_503(self):
        with Server("--parallel", "1", "--max-queue", "1") as s:
            c = client(s, max_retries=0)
            model = c.models.list().data[0].id

            def ask(i):
                try:
                    chat(c, model, f"Story {i}", max_tokens=40 if not SANITIZED else 10)
                    return 200
                except openai.APIStatusError as e:
                    return e.status_code
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                statuses = list(pool.map(ask, range(4)))
            self.assertIn(503, statuses)
            self.assertIn(200, statuses)
            self.assertEqual(set(statuses), {200, 503})

    def test_connections_past_the_limit_get_503(self):
        with Server("--max-connections", "2", "--timeout", "5") as s:
            idle = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(2)]
            time.sleep(0.3)
            status, body = s.get("/health")
            self.assertEqual(status, 503, body)
            for sock in idle:
                sock.close()
            deadline = time.time() + 10
            while s.get("/health")[0] != 200:
                self.assertLess(time.time(), deadline)
                time.sleep(0.1)

    def test_slots_that_cannot_all_fit_in_memory_stop_the_server_at_start(self):
        r = subprocess.run([BINARY, "serve", "--port", "0", "--parallel", "256", "--ctx", str(1 << 20)],
                           capture_output=True, text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not enough memory", r.stderr)

    def test_one_log_line_per_request(self):
        with Server() as s:
            s.get("/health")
            s.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
            s.post("/v1/completions", b"{")
            # A line is written once its response has been sent, so it may trail the response.
            deadline = time.time() + 10
            while True:
                lines = [l for l in s.logs().splitlines() if l.startswith("127.0.0.1 ")]
                if len(lines) >= 3 or time.time() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(len(lines), 3, s.logs())
            # One line for each request, in any order: a request's line may be written after the
            # next request (here the fast 400) has been answered and logged.
            for pattern in (r"^127\.0\.0\.1 GET /health 200 ",
                            r"^127\.0\.0\.1 POST /v1/completions 200 prompt=1 completion=2 \d+\.\d+s$",
                            r"^127\.0\.0\.1 POST /v1/completions 400 prompt=0 completion=0 \d+\.\d+s$"):
                self.assertEqual(sum(1 for l in lines if re.search(pattern, l)), 1, (pattern, lines))


class SteeredServer(unittest.TestCase):
    """`serve --steering`: one control vector for the whole server, applied to every request as
    `run --steering` applies it, alone or batched."""

    VECTOR = os.path.join(TEST_DATA, "steering", "smollm2-happy.cvec.gguf") + ":0.3"

    def test_every_request_is_steered_as_run_steers(self):
        prompt = "Describe your morning."
        plain = run_cli("run", "--chat", "-p", prompt, "--temp", "0", "-n", str(N), "-t", "2")
        steered = run_cli("run", "--chat", "-p", prompt, "--temp", "0", "-n", str(N), "-t", "2", "--steering", self.VECTOR)
        self.assertNotEqual(steered, plain)  # else this test could not tell steering from none
        with Server("--parallel", "2", "--steering", self.VECTOR) as s:
            c = client(s)
            model = c.models.list().data[0].id
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                replies = list(pool.map(lambda _: chat(c, model, prompt, temperature=0, max_tokens=N)[0], range(2)))
        self.assertEqual([r + "\n" for r in replies], [steered, steered])

    def test_bad_steering_options_stop_the_server_at_start(self):
        for args, message in (
            (["--steering-mode", "ablate"], "need --steering FILE"),
            (["--steering", self.VECTOR, "--steering-layers", "0:40"], "0:40"),
            (["--capture-residual", "x.json"], "--capture-residual"),  # a capture is per generation: not on serve
        ):
            r = subprocess.run([BINARY, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=120)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(message, r.stderr, args)


if __name__ == "__main__":
    unittest.main()
