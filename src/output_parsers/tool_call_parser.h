// Tool-call parsers: turn a model's generated text into OpenAI `tool_calls`
// plus the remaining `content`, the way vLLM's --tool-call-parser does, both
// for a whole response (parse) and incrementally while streaming
// (parse_partial, driven by ToolCallStreamer in tool_call_streamer.h).
//
// Formats (make_tool_call_parser names):
//   hermes       Qwen2.5/Qwen3/Hermes: <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//                (several allowed; a missing </tool_call> at the end is accepted; "arguments"
//                given as a JSON string is decoded).
//   llama3_json  Llama 3.1-3.3: [<|python_tag|>]{"name": "f", "parameters"|"arguments": {...}}
//                [; {...}]... The output must begin (after whitespace) with the tag or '{'.
//   mistral      content[TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]  (pre-v11), or
//                content[TOOL_CALLS]f[ARGS]{...}[TOOL_CALLS]g{...}  (v11+, [ARGS] optional).
//                Call ids are 9 alphanumerics, as Mistral requires.
//   pythonic     Llama 3.2/4: [f(a=1, b='x'), g()] with Python-literal keyword arguments, the
//                output being only that list (optionally inside <|python_start|>..<|python_end|>).
//   qwen3_xml    Qwen3-Coder: <tool_call>\n<function=f>\n<parameter=k>\nv\n</parameter>\n
//                </function>\n</tool_call> (the <tool_call> wrapper may be missing). Values are
//                converted by the declared parameter types when `tools` is given (vLLM's
//                rules); without it, values that are JSON numbers/true/false/null/objects/
//                arrays become JSON, everything else a string.
//
// Rules shared by every parser (the streaming contract):
//   - A call is announced, and then never retracted, once its name is complete (and its
//     opening is well formed). Text that fails to be a call before that point stays content
//     verbatim. If a call's arguments are cut off (end of generation) or break after the
//     name, the arguments are closed at the last well-formed point (e.g. `{"a": 1, "b": "x`
//     gives {"a": 1, "b": "x"}); the broken remainder up to the format's call end marker
//     is dropped (hermes, qwen3_xml) or becomes content (llama3_json, mistral, pythonic).
//     vLLM's non-streaming parsers instead return the whole output as content when any call
//     is malformed; we follow its streaming behaviour so both paths agree.
//   - content = the text outside calls, with whitespace directly after a call dropped and a
//     whitespace-only content reported as "". (vLLM keeps only the text before the first
//     call for some formats; we keep all non-call text, never dropping prose.)
//   - arguments = a JSON value's text (normally an object) in json.dumps style:
//     {"a": 1, "b": "x"} with ", " and ": ", non-ASCII unescaped; numbers keep their spelling.
//   - parse_partial(prefix) is a prefix of parse(full) in the following sense: its content is
//     a prefix of the final content, its calls are the first calls of the final result with
//     the same names, and each call's arguments a prefix of the final arguments.
//
// Thread-safety: parsers are immutable; any thread may call any method concurrently.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::output_parsers {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text, normally an object: {"city": "Paris"}
  bool operator==(const ToolCall&) const = default;
};

struct ToolParseResult {
  std::string content;
  std::vector<ToolCall> calls;
  bool tools_called() const { return !calls.empty(); }
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;

  // The whole generated text -> content + calls. Never fails: what is not a call is content.
  // `tools`: the request's OpenAI `tools` array or null (only qwen3_xml uses it).
  ToolParseResult parse(std::string_view text,
                        const nlohmann::ordered_json* tools = nullptr) const {
    return scan(text, /*at_end=*/true, tools);
  }

  // `text` is everything generated so far (more may follow). Returns the content that is
  // certain (a suffix that could begin a call marker, a candidate call whose name is not yet
  // complete, whitespace-only content and a truncated UTF-8 sequence are held back) and the
  // calls begun so far, each with the certain prefix of its arguments.
  ToolParseResult parse_partial(std::string_view text,
                                const nlohmann::ordered_json* tools = nullptr) const {
    return scan(text, /*at_end=*/false, tools);
  }

  // Text that starts a call ("<tool_call>", "[TOOL_CALLS]", ...). Output that contains none
  // of these (and, for llama3_json/pythonic, does not begin with '{' / '[') has no calls.
  virtual std::vector<std::string> call_markers() const = 0;

  // A fresh id for a call: "call_" + 24 random alphanumerics (mistral: 9 alphanumerics).
  virtual std::string make_call_id() const;

  virtual std::string_view name() const = 0;

 protected:
  virtual ToolParseResult scan(std::string_view text, bool at_end,
                               const nlohmann::ordered_json* tools) const = 0;
};

// hermes, llama3_json, mistral, pythonic, qwen3_xml (also accepted: qwen3_coder, the
// vLLM name of the same format). Unknown name -> invalid_argument listing the known ones.
StatusOr<std::unique_ptr<ToolCallParser>> make_tool_call_parser(std::string_view name);
std::vector<std::string> tool_call_parser_names();

// `length` random characters from [A-Za-z0-9] (thread-safe; not for secrets).
std::string random_alphanumeric(size_t length);

}  // namespace strata::output_parsers
