"""Harmony (gpt-oss) through the server with the official `openai` client, on synthesized gpt-oss models
with the real o200k_harmony vocabulary (tests/server/make_harmony_models.py). The scripted model
writes, greedily, a reasoning + answer reply, or a tool call when the request has tools; the server
must turn them into reasoning_content, content and tool_calls (whole and streamed), and render a
conversation with the call and its result back into a prompt."""
import json
import os
import unittest

from harness import MODELS, Server, client

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
ASK = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is the weather in Paris?"}]


def streamed(stream):
    """(content, reasoning, tool calls by index, finish reason) assembled from chunks."""
    content, reasoning, calls, finish = "", "", {}, None
    for chunk in stream:
        for ch in chunk.choices:
            d = ch.delta
            content += d.content or ""
            reasoning += getattr(d, "reasoning_content", None) or (d.model_extra or {}).get("reasoning_content") or ""
            for tc in d.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                call["id"] = tc.id or call["id"]
                call["name"] = (tc.function.name if tc.function else None) or call["name"]
                call["arguments"] += (tc.function.arguments if tc.function else "") or ""
            finish = ch.finish_reason or finish
    return content, reasoning, calls, finish


def reasoning_of(message):
    return getattr(message, "reasoning_content", None) or (message.model_extra or {}).get("reasoning_content")


class ScriptedGptOss(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("-m", os.path.join(MODELS, "gpt-oss-scripted.gguf"), "--parallel", "2").__enter__()
        cls.c = client(cls.server)
        cls.model = "gpt-oss-scripted"

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_reasoning_and_answer(self):
        r = self.c.chat.completions.create(model=self.model, messages=ASK, temperature=0, max_tokens=50)
        m = r.choices[0].message
        self.assertEqual(m.content, "Hello there")
        self.assertEqual(reasoning_of(m), "Sunny skies")
        self.assertIsNone(m.tool_calls)
        self.assertEqual(r.choices[0].finish_reason, "stop")

    def test_reasoning_and_answer_streamed(self):
        s = self.c.chat.completions.create(model=self.model, messages=ASK, temperature=0, max_tokens=50, stream=True,
                                           reasoning_effort="high")
        self.assertEqual(streamed(s), ("Hello there", "Sunny skies", {}, "stop"))

    def test_stop_string_applies_to_the_answer(self):
        r = self.c.chat.completions.create(model=self.model, messages=ASK, temperature=0, max_tokens=50, stop=[" the"])
        self.assertEqual(r.choices[0].message.content, "Hello")
        self.assertEqual(reasoning_of(r.choices[0].message), "Sunny skies")
        self.assertEqual(r.choices[0].finish_reason, "stop")

    def test_tool_call(self):
        r = self.c.chat.completions.create(model=self.model, messages=ASK, tools=TOOLS, temperature=0, max_tokens=50)
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        self.assertIsNone(choice.message.content)
        [call] = choice.message.tool_calls
        self.assertEqual(call.type, "function")
        self.assertTrue(call.id.startswith("call_"))
        self.assertEqual(call.function.name, "get_weather")
        self.assertEqual(json.loads(call.function.arguments), {"city": "Paris"})

    def test_tool_call_streamed(self):
        s = self.c.chat.completions.create(model=self.model, messages=ASK, tools=TOOLS, temperature=0, max_tokens=50, stream=True)
        content, reasoning, calls, finish = streamed(s)
        self.assertEqual((content, reasoning, finish), ("", "", "tool_calls"))
        self.assertEqual(list(calls), [0])
        self.assertEqual(calls[0]["name"], "get_weather")
        self.assertTrue(calls[0]["id"].startswith("call_"))
        self.assertEqual(json.loads(calls[0]["arguments"]), {"city": "Paris"})

    def test_tool_result_goes_back_into_the_prompt(self):
        first = self.c.chat.completions.create(model=self.model, messages=ASK, tools=TOOLS, temperature=0, max_tokens=50)
        call = first.choices[0].message.tool_calls[0]
        history = ASK + [{"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
                         {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"sky": "sunny"})}]
        second = self.c.chat.completions.create(model=self.model, messages=history, tools=TOOLS, temperature=0, max_tokens=50)
        self.assertGreater(second.usage.prompt_tokens, first.usage.prompt_tokens + 20)
        # The rendered history starts like the first prompt, so its cache is reused.
        self.assertGreater(second.usage.prompt_tokens_details.cached_tokens, 0)
        self.assertEqual(second.choices[0].finish_reason, "tool_calls")  # this model always calls when it has tools

    def test_tool_without_call_is_a_bad_request(self):
        import openai
        with self.assertRaises(openai.BadRequestError) as e:
            self.c.chat.completions.create(model=self.model, messages=ASK + [{"role": "tool", "content": "x"}], max_tokens=4)
        self.assertEqual(e.exception.param, "messages")


class RandomGptOss(unittest.TestCase):
    def test_random_weights_stream_without_errors(self):
        with Server("-m", os.path.join(MODELS, "gpt-oss-random.gguf")) as s:
            c = client(s)
            for effort in ("low", "medium"):
                out = c.chat.completions.create(model="gpt-oss-random", messages=ASK, max_tokens=16, seed=3,
                                                reasoning_effort=effort, stream=True, stream_options={"include_usage": True})
                chunks = list(out)
                self.assertGreater(chunks[-1].usage.prompt_tokens, 50)
                self.assertLessEqual(chunks[-1].usage.completion_tokens, 16)
                finishes = [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason]
                self.assertEqual(len(finishes), 1)
                self.assertIn(finishes[0], ("stop", "length", "tool_calls"))


class StreamedExperts(unittest.TestCase):
    def test_same_text_as_resident_and_the_hit_ratio_on_metrics(self):
        model = os.path.join(MODELS, "gpt-oss-random.gguf")
        ask = dict(model="gpt-oss-random", messages=ASK, max_tokens=12, temperature=0)
        with Server("-m", model, "--expert-residency", "resident") as s:
            resident = client(s).chat.completions.create(**ask).choices[0].message
            self.assertNotIn("turbospark_expert_cache_hit_ratio", s.metrics())
        with Server("-m", model, "--expert-residency", "streamed", "--expert-cache-slots", "5") as s:
            self.assertNotIn("turbospark_expert_cache_hit_ratio", s.metrics())  # nothing asked for yet
            streamed = client(s).chat.completions.create(**ask).choices[0].message
            ratio = s.metrics()["turbospark_expert_cache_hit_ratio"]
        self.assertEqual(streamed.model_dump(), resident.model_dump())
        # 5 of the tiny model's experts per layer: some lookups hit, many cannot.
        self.assertGreater(ratio, 0.0)
        self.assertLess(ratio, 1.0)


if __name__ == "__main__":
    unittest.main()
