#include "server/json_writer.h"

#include <charconv>
#include <cmath>

#include "tokenizer/utf8.h"

namespace strata::server {

void append_json_escaped(std::string_view s, std::string* out) {
  // JSON text is UTF-8: bytes that are not (from a request echoed in an error
  // message, a URL) become U+FFFD, as from_utf8_lossy does.
  if (!tokenizer::is_valid_utf8(s)) return append_json_escaped(tokenizer::utf8_lossy(s), out);
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (u < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[u >> 4]);
          out->push_back(kHex[u & 15]);
        } else {
          out->push_back(c);
        }
    }
  }
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "null";
  std::string s(buf, ptr);
  // Keep integral doubles recognisably floating ("1.0"), as Python prints them.
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_.push_back('{');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_.push_back('}');
  first_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_.push_back('[');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_.push_back(']');
  first_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  out_.push_back('"');
  append_json_escaped(name, &out_);
  out_.append("\":");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  out_.push_back('"');
  append_json_escaped(s, &out_);
  out_.push_back('"');
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  before_value();
  out_.append(std::to_string(v));
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  before_value();
  out_.append(json_number(v));
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  before_value();
  out_.append(v ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_.append("null");
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_.append(json);
  return *this;
}

}  // namespace strata::server
