// Converting qwen3_xml parameter values (raw text between <parameter=k> and
// </parameter>) into JSON, following vLLM's Qwen3-Coder rules:
//   - "null" (any case) -> null.
//   - With the request's tools: the function's parameters.properties[key].type decides:
//     string/str/text/varchar/char/enum -> string; int*/uint*/long*/short*/unsigned* -> integer
//     (else string); num*/float* -> number, written as an integer when whole (else string);
//     boolean/bool/binary -> true iff "true" (any case); object/array/arr/dict*/list* -> the
//     value parsed as JSON, else as a Python literal, else string; other types -> a Python
//     literal, else string. A key the function does not declare, or a function with no
//     declared properties, -> string.
//   - Without tools (best effort): a value that is one JSON number, true, false, null,
//     object or array becomes that JSON value; anything else a string.
//
// Thread-safety: immutable after construction.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace strata::output_parsers::internal {

class ParamTypes {
 public:
  // `tools`: the OpenAI tools array ([{"type": "function", "function": {"name", "parameters"}}])
  // or null. The object refers into `tools`, which must outlive it.
  static ParamTypes for_function(const nlohmann::ordered_json* tools, std::string_view function);

  // JSON text for the value of `key`.
  std::string convert(std::string_view key, std::string_view raw) const;

 private:
  bool has_tools_ = false;
  const nlohmann::ordered_json* properties_ = nullptr;  // null or an object
};

}  // namespace strata::output_parsers::internal
