#include "output_parsers/tool_call_parser.h"

#include <random>

#include "output_parsers/parser_support.h"

namespace strata::output_parsers {

std::string ToolCallParser::make_call_id() const { return "call_" + random_alphanumeric(24); }

std::string random_alphanumeric(size_t length) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string out(length, ' ');
  for (char& c : out) c = kAlphabet[pick(rng)];
  return out;
}

std::vector<std::string> tool_call_parser_names() {
  return {"hermes", "llama3_json", "mistral", "pythonic", "qwen3_xml"};
}

StatusOr<std::unique_ptr<ToolCallParser>> make_tool_call_parser(std::string_view name) {
  if (name == "hermes") return internal::make_hermes_parser();
  if (name == "llama3_json") return internal::make_llama3_json_parser();
  if (name == "mistral") return internal::make_mistral_parser();
  if (name == "pythonic") return internal::make_pythonic_parser();
  if (name == "qwen3_xml" || name == "qwen3_coder") return internal::make_qwen3_xml_parser();
  std::string known;
  for (const std::string& n : tool_call_parser_names()) {
    if (!known.empty()) known += ", ";
    known += n;
  }
  return invalid_argument("unknown tool call parser '" + std::string(name) + "'; known: " + known);
}

}  // namespace strata::output_parsers
