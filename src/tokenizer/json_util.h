// Small helpers for reading tokenizer.json objects with nlohmann::json
// without letting exceptions escape (internal to the tokenizer module); field
// reads go through config/json_fields.h.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"
#include "config/json_fields.h"
#include "tokenizer/regex.h"

namespace strata::tokenizer {

// The value of `key` when present and of the requested type, else `fallback`.
inline bool json_bool(const nlohmann::json& j, const char* key, bool fallback) {
  return config::bool_or(j, key, fallback);
}
inline std::string json_string(const nlohmann::json& j, const char* key,
                               const std::string& fallback) {
  return config::string_or(j, key, fallback);
}
inline std::string json_type(const nlohmann::json& j) { return json_string(j, "type", ""); }

// Largest token id accepted from a tokenizer.json: ids index dense tables, so a
// stray 2e9 would allocate gigabytes; real vocabularies stay far below 2^24.
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

// A token id: a JSON integer in [0, kMaxTokenId]. `what` names it in the error.
// (json::get<int32_t> on a float such as 1e76 or on 2^40 is undefined/truncating.)
inline StatusOr<int32_t> json_token_id(const nlohmann::json& j, const std::string& what) {
  const std::optional<int64_t> id = config::exact_int64(j, /*allow_whole_floats=*/false);
  if (!id || *id < 0 || *id > kMaxTokenId) {
    return invalid_argument(what + ": token id " + j.dump() + " is not an integer in [0, " +
                            std::to_string(kMaxTokenId) + "]");
  }
  return static_cast<int32_t>(*id);
}

// HF patterns are {"String": "literal"} or {"Regex": "pattern"}.
inline StatusOr<Regex> json_pattern(const nlohmann::json& j, const std::string& component) {
  auto it = j.find("pattern");
  if (it == j.end() || !it->is_object()) {
    return invalid_argument(component + ": missing 'pattern' object");
  }
  if (it->contains("String") && (*it)["String"].is_string()) {
    return Regex::compile((*it)["String"].get<std::string>(), /*is_literal=*/true);
  }
  if (it->contains("Regex") && (*it)["Regex"].is_string()) {
    return Regex::compile((*it)["Regex"].get<std::string>(), /*is_literal=*/false);
  }
  return invalid_argument(component + ": 'pattern' must hold 'String' or 'Regex'");
}

// Replaces every match of `pattern` in `text` with `content`.
inline std::string regex_replace_all(const Regex& pattern, const std::string& text,
                                     const std::string& content) {
  thread_local std::vector<ByteRange> matches;
  pattern.find_all(text, &matches);
  if (matches.empty()) return text;
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (const ByteRange& m : matches) {
    out.append(text, prev, m.begin - prev);
    out += content;
    prev = m.end;
  }
  out.append(text, prev, std::string::npos);
  return out;
}

}  // namespace strata::tokenizer
