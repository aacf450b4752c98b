// Test data: hand-written model outputs in each tool-call format, with the
// content and calls parse() must give. Shared by the parser and streaming tests.
#pragma once

#include <string>
#include <vector>

#include "output_parsers/tool_call_parser.h"

namespace strata::output_parsers::testing {

struct RecordedOutput {
  std::string parser;  // make_tool_call_parser name
  std::string label;
  std::string text;
  std::string content;
  std::vector<ToolCall> calls;
};

inline std::vector<RecordedOutput> recorded_outputs() {
  return {
      // ---- hermes ----
      {"hermes",
       "single call",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
       "\"celsius\"}}\n</tool_call>",
       "",
       {{"get_weather", R"({"city": "Paris", "unit": "celsius"})"}}},
      {"hermes",
       "content then parallel calls",
       "I'll check both cities.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
       "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
       "\"arguments\": {\"city\": \"Berlin\"}}\n</tool_call>",
       "I'll check both cities.\n",
       {{"get_weather", R"({"city": "Paris"})"}, {"get_weather", R"({"city": "Berlin"})"}}},
      {"hermes",
       "compact nested json is normalized",
       R"(<tool_call>
{"name":"search","arguments":{"q":"a}b","n":3,"tags":["x","y"],"nested":{"deep":{"k":null}},"f":-1.5e3}}
</tool_call>)",
       "",
       {{"search",
         R"({"q": "a}b", "n": 3, "tags": ["x", "y"], "nested": {"deep": {"k": null}}, "f": -1.5e3})"}}},
      {"hermes",
       "strings hold end tag, quotes, unicode",
       R"(<tool_call>
{"name": "write_file", "arguments": {"path": "notes.md", "text": "Use </tool_call> to end; say \"hi\" — café \u00e9 \ud83d\ude00\n"}}
</tool_call>)",
       "",
       {{"write_file",
         R"({"path": "notes.md", "text": "Use </tool_call> to end; say \"hi\" — café é 😀\n"})"}}},
      {"hermes",
       "not json stays content",
       "<tool_call>\nnot json at all\n</tool_call>",
       "<tool_call>\nnot json at all\n</tool_call>",
       {}},
      {"hermes",
       "malformed arguments are closed at the last good point",
       "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,}}\n</tool_call>\nDone.",
       "Done.",
       {{"f", R"({"a": 1})"}}},
      {"hermes",
       "unterminated last call",
       "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": [1, 2]}}",
       "",
       {{"f", R"({"x": [1, 2]})"}}},
      {"hermes",
       "cut off inside a string",
       "Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": \"abc",
       "Sure.",
       {{"f", R"({"x": "abc"})"}}},
      {"hermes",
       "plain answer",
       "Hello! How can I help? 1 < 2 and 3 > 2.",
       "Hello! How can I help? 1 < 2 and 3 > 2.",
       {}},
      {"hermes",
       "arguments given as a json string",
       R"(<tool_call>
{"name": "f", "arguments": "{\"a\": 1, \"b\": \"x\"}"}
</tool_call>)",
       "",
       {{"f", R"({"a": 1, "b": "x"})"}}},
      {"hermes",
       "whitespace-only content is empty",
       "\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n",
       "",
       {{"f", "{}"}}},
      {"hermes",
       "unknown object structure stays content",
       "<tool_call>\n{\"function\": \"f\", \"args\": {}}\n</tool_call>",
       "<tool_call>\n{\"function\": \"f\", \"args\": {}}\n</tool_call>",
       {}},
      {"hermes",
       "marker mentioned in prose",
       "Use the <tool_call> tag like this.",
       "Use the <tool_call> tag like this.",
       {}},
      {"hermes",
       "text between and after calls is kept",
       "A\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\nB\n<tool_call>\n"
       "{\"name\": \"g\", \"arguments\": {\"k\": false}}\n</tool_call>\n",
       "A\nB\n",
       {{"f", "{}"}, {"g", R"({"k": false})"}}},

      // ---- llama3_json ----
      {"llama3_json",
       "single call",
       R"({"name": "get_weather", "parameters": {"city": "Paris"}})",
       "",
       {{"get_weather", R"({"city": "Paris"})"}}},
      {"llama3_json",
       "python tag and two calls",
       R"(<|python_tag|>{"name": "a", "parameters": {"x": 1}}; {"name": "b", "arguments": {"y": [true, null]}})",
       "",
       {{"a", R"({"x": 1})"}, {"b", R"({"y": [true, null]})"}}},
      {"llama3_json",
       "prose with braces",
       R"(The weather is {"unknown"} today.)",
       R"(The weather is {"unknown"} today.)",
       {}},
      {"llama3_json", "json that is not a call", R"({"answer": 42})", R"({"answer": 42})", {}},
      {"llama3_json",
       "text after the call",
       "{\"name\": \"f\", \"parameters\": {}}\nThis will fetch it.",
       "This will fetch it.",
       {{"f", "{}"}}},
      {"llama3_json",
       "cut off",
       R"({"name": "f", "parameters": {"q": "new yo)",
       "",
       {{"f", R"({"q": "new yo"})"}}},
      {"llama3_json",
       "malformed value after the name",
       R"({"name": "f", "parameters": {"a": tru}})",
       "}}",
       {{"f", "{}"}}},

      {"llama3_json",
       "leading whitespace",
       "\n  {\"name\": \"f\", \"parameters\": {\"s\": \"a;b\"}} ; {\"name\": \"g\", "
       "\"parameters\": {}}",
       "",
       {{"f", R"({"s": "a;b"})"}, {"g", "{}"}}},

      // ---- mistral ----
      {"mistral",
       "array of calls",
       R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"tz": "CET"}}])",
       "",
       {{"get_weather", R"({"city": "Paris"})"}, {"get_time", R"({"tz": "CET"})"}}},
      {"mistral",
       "content before the marker",
       R"(Let me look that up.[TOOL_CALLS][{"name": "search", "arguments": {"q": "vLLM"}}])",
       "Let me look that up.",
       {{"search", R"({"q": "vLLM"})"}}},
      {"mistral",
       "v11 calls with [ARGS]",
       R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"tz": "CET"})",
       "",
       {{"get_weather", R"({"city": "Paris"})"}, {"get_time", R"({"tz": "CET"})"}}},
      {"mistral",
       "v11 call without [ARGS]",
       R"([TOOL_CALLS]add{"a": 3.5, "b": 4})",
       "",
       {{"add", R"({"a": 3.5, "b": 4})"}}},
      {"mistral",
       "marker without a call",
       "[TOOL_CALLS] not a call",
       "[TOOL_CALLS] not a call",
       {}},
      {"mistral",
       "array cut off after the first call",
       R"([TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "argu)",
       "",
       {{"a", R"({"x": 1})"}, {"b", "{}"}}},
      {"mistral", "plain answer", "Paris is sunny [today].", "Paris is sunny [today].", {}},

      // ---- pythonic ----
      {"pythonic",
       "single call",
       R"([get_weather(city='San Francisco', metric="celsius")])",
       "",
       {{"get_weather", R"({"city": "San Francisco", "metric": "celsius"})"}}},
      {"pythonic",
       "parallel calls with literals",
       R"([get_weather(city='Paris', days=3, hourly=True), search(q="it's", filters={'lang': 'en', 'max': 1.5}, tags=['a', 'b'], extra=None), ping()])",
       "",
       {{"get_weather", R"({"city": "Paris", "days": 3, "hourly": true})"},
        {"search",
         R"({"q": "it's", "filters": {"lang": "en", "max": 1.5}, "tags": ["a", "b"], "extra": null})"},
        {"ping", "{}"}}},
      {"pythonic",
       "python tags and escapes",
       R"(<|python_start|>[f(x=-1, y=.5, s='a\nb\'c', t=(1, 2,))]<|python_end|>)",
       "",
       {{"f", R"({"x": -1, "y": 0.5, "s": "a\nb'c", "t": [1, 2]})"}}},
      {"pythonic",
       "prose with brackets",
       "[citation needed] is fine.",
       "[citation needed] is fine.",
       {}},
      {"pythonic", "plain answer", "The answer is 4.", "The answer is 4.", {}},
      {"pythonic",
       "positional arguments break after the name",
       "[f(1, 2)]",
       "1, 2)]",
       {{"f", "{}"}}},
      {"pythonic", "cut off", "[f(a='xy", "", {{"f", R"({"a": "xy"})"}}},

      {"pythonic",
       "brackets and parens inside strings",
       R"([f(s='a)b]c', d={'k': '], ('}), g(n=[[1], []])])",
       "",
       {{"f", R"({"s": "a)b]c", "d": {"k": "], ("}})"}, {"g", R"({"n": [[1], []]})"}}},

      // ---- qwen3_xml ----
      {"qwen3_xml",
       "single call",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
       "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
       "",
       {{"get_weather", R"({"city": "Paris", "days": 3})"}}},
      {"qwen3_xml",
       "content then two calls",
       "Let me check.\n\n<tool_call>\n<function=a>\n<parameter=x>\n{\"k\": [1,2]}\n</parameter>\n"
       "</function>\n</tool_call>\n<tool_call>\n<function=b>\n</function>\n</tool_call>",
       "Let me check.\n\n",
       {{"a", R"({"x": {"k": [1, 2]}})"}, {"b", "{}"}}},
      {"qwen3_xml",
       "multi-line value with markup",
       "<tool_call>\n<function=write>\n<parameter=code>\ndef f():\n    return \"<b>\"\n"
       "</parameter>\n</function>\n</tool_call>",
       "",
       {{"write", R"({"code": "def f():\n    return \"<b>\""})"}}},
      {"qwen3_xml",
       "unterminated value at the end",
       "<tool_call>\n<function=f>\n<parameter=q>\nhello",
       "",
       {{"f", R"({"q": "hello"})"}}},
      {"qwen3_xml",
       "no function stays content",
       "<tool_call>\nno function here\n</tool_call>",
       "<tool_call>\nno function here\n</tool_call>",
       {}},
      {"qwen3_xml",
       "bare function, null and true",
       "<function=f>\n<parameter=a>\nnull\n</parameter>\n<parameter=b>\ntrue\n</parameter>\n"
       "</function>",
       "",
       {{"f", R"({"a": null, "b": true})"}}},
      {"qwen3_xml", "plain answer", "Use x < y here.", "Use x < y here.", {}},
  };
}

}  // namespace strata::output_parsers::testing
