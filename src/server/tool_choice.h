// tool_choice "required" and named tools, implemented as vLLM does with the
// constrained decoder, so they work with any model and need no tool-call
// parser:
//   required: the output is a JSON array of calls,
//             [{"name": <a tool's name>, "parameters": <its arguments>}, ...]
//             (at least one; exactly one when parallel_tool_calls is false);
//   named:    the output is the named tool's arguments object.
// The schemas below constrain the output; the parsers turn it into tool calls
// (arguments are the raw JSON text of each call's parameters, so a streamed
// call's argument fragments concatenate to exactly the non-streamed value).
//
// Thread-safety: pure functions; parsers are immutable.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "output_parsers/tool_call_parser.h"
#include "server/api_error.h"

namespace strata::server {

// `tools`: the request's tools list ([{type: function, function: {name,
// parameters}}]). Errors (400): a tool without a name, conflicting $defs.
ApiOr<std::string> required_tools_schema(const nlohmann::ordered_json& tools,
                                         bool parallel_tool_calls);
// Errors (400): no tool of that name.
ApiOr<std::string> named_tool_schema(const nlohmann::ordered_json& tools, const std::string& name);

std::unique_ptr<output_parsers::ToolCallParser> make_required_tool_calls_parser();
std::unique_ptr<output_parsers::ToolCallParser> make_named_tool_call_parser(std::string name);

}  // namespace strata::server
