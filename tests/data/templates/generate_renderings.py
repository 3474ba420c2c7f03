#!/usr/bin/env python3
"""Expected renderings for the formats renderings.json does not cover (Llama-3, Gemma) and for
extra Harmony cases (tool schemas, tool-call reasoning). Renders the template texts beside this
file with jinja2 the way Hugging Face transformers does, and writes generated-renderings.json.

Inputs are key-sorted before rendering: TurboSpark holds requests in nlohmann::json, whose objects
iterate in sorted key order, so only sorted inputs have one well-defined expected output.

Usage: python3 generate_renderings.py   (from any directory)
"""
import json
import pathlib

from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = pathlib.Path(__file__).resolve().parent
DATE = "2026-12-02"


def sort_keys(x):
    if isinstance(x, dict):
        return {k: sort_keys(x[k]) for k in sorted(x)}
    if isinstance(x, list):
        return [sort_keys(v) for v in x]
    return x


def render(template_text, inputs, bos_token):
    def raise_exception(msg):
        raise ValueError(msg)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: DATE
    return env.from_string(template_text).render(bos_token=bos_token, **inputs)


def msgs(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


TURN_CASES = [
    ("user-only", {"messages": msgs(("user", "What is 2+2?")), "add_generation_prompt": True}),
    ("system-user", {"messages": msgs(("system", "You are terse."), ("user", "Name a color.")),
                     "add_generation_prompt": True}),
    ("multi-turn", {"messages": msgs(("user", "Hi!"), ("assistant", "Hello! How can I help?"),
                                     ("user", "Tell me a joke.\nA short one.")),
                    "add_generation_prompt": True}),
    ("no-generation-prompt", {"messages": msgs(("user", "Ünïcödé ✓ 日本"), ("assistant", "Noted.")),
                              "add_generation_prompt": False}),
    ("whitespace-trimmed", {"messages": msgs(("system", " Be brief.\n"), ("user", "\n  Spaces?  \t"),
                                             ("assistant", " Yes. \n\n"), ("user", "ok")),
                            "add_generation_prompt": True}),
]

WEATHER_CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}

SCHEMA_TOOLS = [
    {"type": "function", "function": {
        "name": "search", "description": "Search the catalogue.",
        "parameters": {"type": "object", "required": ["query", "filters"], "properties": {
            "query": {"type": "string", "description": "Search terms"},
            "limit": {"type": "integer", "default": 10},
            "tags": {"type": "array", "items": {"type": "string"}},
            "scores": {"type": "array", "items": {"type": "number"}, "nullable": True},
            "points": {"type": "array", "items": {"type": "object", "properties": {
                "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}},
            "anything": {"type": "array"},
            "exact": {"type": "boolean", "default": False},
            "note": {"type": "string", "nullable": True},
            "filters": {"type": "object", "properties": {
                "color": {"type": "string", "enum": ["red", "blue"]}, "size": {"type": "integer"}}},
            "meta": {"type": "object"},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
            "either": {"oneOf": [{"type": "string", "description": "a name"},
                                 {"type": "integer", "default": 3}]},
            "multi": {"type": ["string", "number"]},
            "untyped": {"description": "No type given"},
        }}}},
    {"type": "function", "function": {"name": "ping", "description": "Check liveness.",
                                      "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {"name": "now", "description": "Current time."}},
]

HARMONY_CASES = [
    ("tool-schemas", {"messages": msgs(("user", "Find red things.")), "add_generation_prompt": True,
                      "tools": SCHEMA_TOOLS}),
    ("tool-call-reasoning-kept", {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "thinking": "Need the weather tool.", "tool_calls": [WEATHER_CALL]},
        {"role": "tool", "content": "{\"temp\": 18}"}],
        "add_generation_prompt": True, "reasoning_effort": "low", "tools": SCHEMA_TOOLS[1:2]}),
    ("tool-call-reasoning-dropped", {"messages": [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Calling the tool.", "tool_calls": [WEATHER_CALL]},
        {"role": "tool", "content": "sunny, \"warm\"\n"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "Thanks"}],
        "add_generation_prompt": True}),
    ("final-with-thinking", {"messages": [
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "thinking": "Add them.", "content": "5"}],
        "add_generation_prompt": False}),
]

SUITES = [
    ("meta-llama-3-8b-instruct", "<|begin_of_text|>", TURN_CASES),
    ("gemma-3-it", "<bos>", TURN_CASES),
    ("openai-gpt-oss-120b", "", HARMONY_CASES),
]


def main():
    out = {"how": __doc__.strip().splitlines()[0] + " See generate_renderings.py.",
           "date": DATE, "renderings": {}}
    for name, bos, cases in SUITES:
        text = (HERE / f"{name}.jinja").read_text()
        rows = []
        for case, inputs in cases:
            inputs = sort_keys(inputs)
            rows.append({"case": case, "bos_token": bos, "input": inputs,
                         "rendered": render(text, inputs, bos)})
        out["renderings"][name] = rows
    (HERE / "generated-renderings.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
