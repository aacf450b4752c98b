// Python str semantics on UTF-8 text, shared by filters and str methods:
// strip with Unicode whitespace, case mapping, split/splitlines, replace.
// Case mapping covers ASCII only (a known gap). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::chat_template {

// str.strip/lstrip/rstrip; `chars` null means whitespace.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);
std::string py_lower(std::string_view s);
std::string py_upper(std::string_view s);
std::string py_capitalize(std::string_view s);
// str.title(): a letter following a letter is lowered, otherwise uppered.
std::string py_title(std::string_view s);
// str.split / str.rsplit; `sep` null splits on whitespace runs; maxsplit < 0 is unlimited.
std::vector<std::string> py_split(std::string_view s, const std::string* sep, int64_t maxsplit,
                                  bool from_right);
std::vector<std::string> py_splitlines(std::string_view s);
// str.replace; count < 0 replaces all. Empty `old` inserts between characters.
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
bool is_py_space(std::string_view ch);

}  // namespace strata::chat_template
