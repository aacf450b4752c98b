// JsonWriter: builds compact single-line JSON text (what SSE `data:` lines and
// response bodies need) without a DOM. Commas are inserted automatically;
// strings are escaped per RFC 8259 (control characters as \u00XX, "/" kept).
// Doubles use the shortest representation that round-trips; NaN/Inf become
// null (JSON has no spelling for them).
//
//   JsonWriter w;
//   w.begin_object().key("id").value("x").key("n").value(3).end_object();
//   w.str() == R"({"id":"x","n":3})"
//
// Thread-safety: one writer per thread; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::server {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& null();
  // Inserts already-encoded JSON (e.g. a nested document) as one value.
  JsonWriter& raw(std::string_view json);

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void before_value();

  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

// Appends `s` JSON-escaped (without quotes) to `out`; invalid UTF-8 in `s`
// becomes U+FFFD (one per maximal invalid subpart), so the output is always
// valid JSON.
void append_json_escaped(std::string_view s, std::string* out);
// Shortest round-trip text for a double ("null" for NaN/Inf).
std::string json_number(double v);

}  // namespace strata::server
