#include "structured/builtin_grammars.h"

#include <set>

#include "structured/regex_to_gbnf.h"

namespace strata::structured {

std::string gbnf_literal(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "\"";
  size_t pos = 0;
  while (pos < bytes.size()) {
    const auto byte = static_cast<unsigned char>(bytes[pos]);
    if (byte >= 0x80) {
      const size_t length = utf8_sequence_length(bytes, pos);
      if (length > 0) {
        out.append(bytes.substr(pos, length));
        pos += length;
        continue;
      }
    }
    ++pos;
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += static_cast<char>(byte);
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\r') {
      out += "\\r";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte >= 0x7F) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += static_cast<char>(byte);
    }
  }
  out += '"';
  return out;
}

StatusOr<std::string> choice_to_gbnf(const std::vector<std::string>& choices) {
  if (choices.empty()) return invalid_argument("choice: the list of choices is empty");
  std::set<std::string_view> seen;
  std::string body;
  bool has_empty = false;
  for (const std::string& choice : choices) {
    if (!seen.insert(choice).second) continue;
    if (choice.empty()) {
      has_empty = true;
      continue;
    }
    if (!body.empty()) body += " | ";
    body += gbnf_literal(choice);
  }
  if (body.empty()) return std::string("root ::= \"\"\n");
  if (has_empty) body = "( " + body + " )?";
  return "root ::= " + body + "\n";
}

std::string json_object_gbnf(const JsonSchemaOptions& options) {
  StatusOr<std::string> gbnf = json_schema_to_gbnf(R"({"type": "object"})", options);
  STRATA_CHECK(gbnf.ok()) << gbnf.status().to_string();
  return std::move(gbnf).value();
}

}  // namespace strata::structured
