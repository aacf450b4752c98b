// Incremental scanning of JSON and Python literal values into normalized JSON
// text, the building block of every tool-call parser.
//
// A model writes a call's arguments a few characters at a time; the parsers
// re-scan the text generated so far on every update and need to know which
// part of the normalized arguments is already certain. scan_value() reads one
// value starting at `pos` and returns:
//   - certain: the normalized JSON text (json.dumps style: ", " and ": "
//     separators, non-ASCII kept as UTF-8, only '"', '\\' and control
//     characters escaped) that every continuation of the input begins with.
//     Numbers appear only once terminated, a member or item only once its
//     value has begun, a string's characters as soon as they are decoded
//     (never half an escape or half a UTF-8 sequence).
//   - closers: what closes `certain` into valid JSON (e.g. `"}]`), used to
//     repair a call whose text was cut off or broke after it was announced.
//   - state and end: kComplete with `end` one past the value, kIncomplete
//     (ran out of text; everything so far is well formed), or kInvalid with
//     `end` at the first byte that cannot continue a value.
// Invariant (prefix monotonicity): for text t and any extension t + u,
// scan(t).certain is a prefix of scan(t + u).certain.
//
// The JSON dialect is strict RFC 8259 (what Python's json.loads accepts, minus
// NaN/Infinity). The Python dialect reads literals as ast.literal_eval would
// for calls like f(a='x', b=[1, 2.5], c={'k': None}): '...' and "..." strings
// with Python escapes, ints, floats, True/False/None, lists, tuples (as
// arrays), dicts with string keys, trailing commas. Numbers keep their source
// spelling (Python floats such as `.5`/`5.` get the missing zero).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace strata::output_parsers {

enum class ScanState { kComplete, kIncomplete, kInvalid };

enum class Dialect { kJson, kPython };

struct ValueScan {
  ScanState state = ScanState::kIncomplete;
  size_t end = 0;       // see the header comment
  std::string certain;  // normalized JSON prefix
  std::string closers;  // certain + closers is valid JSON when certain is non-empty
  // certain + closers, or "{}" when nothing is certain: the value to report
  // for a call whose arguments were cut off or broke.
  std::string repaired() const;
};

// Reads one value at `pos` (leading whitespace skipped). With `at_end` the
// text is known to be complete, so a number or literal that runs to its end
// is complete rather than incomplete.
ValueScan scan_value(std::string_view text, size_t pos, Dialect dialect, bool at_end = false);

// Reads the string literal whose opening quote is at text[pos] ('"', or also '\''
// in the Python dialect) and decodes it into *decoded (the characters decoded so
// far unless complete). *end: one past the closing quote when complete.
ScanState scan_string(std::string_view text, size_t pos, Dialect dialect, std::string* decoded,
                      size_t* end);

// Scans a whole string as one JSON value (surrounding whitespace allowed).
// Returns the normalized text, or false when `text` is not exactly one value.
bool normalize_json(std::string_view text, std::string* normalized);

// Appends `utf8` as a JSON string literal ("..." with json.dumps escapes).
void append_json_string(std::string& out, std::string_view utf8);

// Length of the longest prefix of `s` that does not end inside a UTF-8
// sequence (a truncated trailing sequence is left out).
size_t complete_utf8_length(std::string_view s);

// Index of the first non-whitespace byte at or after `pos` (JSON whitespace).
size_t skip_whitespace(std::string_view text, size_t pos);

bool is_whitespace_only(std::string_view s);

// True when text[pos..] is a proper, non-empty prefix of `word` (the text
// may continue into `word`).
bool is_partial_prefix(std::string_view text, size_t pos, std::string_view word);

}  // namespace strata::output_parsers
