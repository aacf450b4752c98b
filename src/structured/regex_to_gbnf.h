// Regular expressions -> GBNF (vLLM's `regex` / `guided_regex`), plus the
// code-point sets that the JSON Schema converter shares with it.
//
// Supported syntax (Python `re` / ECMAScript subset; the match is always a
// full match): literals; escapes \. \\ \n \t \r \f \v \0 \xHH \uHHHH
// \UHHHHHHHH \d \D \w \W \s \S (ASCII meanings); classes [a-z] [^...] with
// ranges and shorthands; `.` (any code point except \n); groups ( ),
// (?: ), named groups (?P<n> ) (?<n> ) (treated as plain groups);
// alternation |; quantifiers * + ? {m} {m,} {m,n} {,n}, each optionally lazy
// (`?` suffix: same language); `^` at the very start and `$` at the very end
// (ignored). Errors (invalid_argument naming the construct): backreferences,
// lookahead/lookbehind, word boundaries and other anchors, inline flags,
// Unicode properties, possessive quantifiers, invalid UTF-8, bounds above
// kMaxRegexRepeat, nesting deeper than kMaxRegexDepth, patterns over
// kMaxRegexBytes, and a repeated sequence of more than 16 parts that can all
// be empty (a repetition of something that can match the empty string is
// rewritten to repeat its non-empty part, since GBNF engines reject
// repetitions that can loop without consuming input).
//
// All functions are pure and thread-safe. Code points are Unicode scalar
// values 0..0x10FFFF; GBNF classes and `.` match one code point.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::structured {

inline constexpr uint32_t kLastCodePoint = 0x10FFFF;
inline constexpr int kMaxRegexRepeat = 10000;  // largest {m,n} bound accepted
inline constexpr int kMaxRegexDepth = 32;  // group nesting (the GBNF parser allows 128 parentheses)
inline constexpr size_t kMaxRegexBytes = 64 * 1024;

// Length of the valid UTF-8 sequence starting at text[pos] (1..4; 1 for
// ASCII), or 0 when the bytes there are not valid UTF-8 (overlong forms and
// surrogates are invalid). Requires pos < text.size().
size_t utf8_sequence_length(std::string_view text, size_t pos);
// Decodes valid UTF-8 into code points; invalid_argument on invalid bytes.
StatusOr<std::vector<uint32_t>> decode_utf8(std::string_view text);
void append_utf8(uint32_t code_point, std::string& out);

// A set of code points, kept as sorted, disjoint, non-adjacent inclusive ranges.
class CodePointSet {
 public:
  struct Range {
    uint32_t first;
    uint32_t last;
  };
  CodePointSet() = default;
  static CodePointSet single(uint32_t code_point) { return range(code_point, code_point); }
  static CodePointSet range(uint32_t first, uint32_t last);
  static CodePointSet all() { return range(0, kLastCodePoint); }

  void add(uint32_t first, uint32_t last);
  void add(const CodePointSet& other);
  CodePointSet complement() const;
  CodePointSet intersect(const CodePointSet& other) const;
  bool contains(uint32_t code_point) const;
  bool empty() const { return ranges_.empty(); }
  // Number of code points in the set.
  uint64_t size() const;
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  std::vector<Range> ranges_;
};

// GBNF matching one code point of a non-empty `set`: a literal, a class
// ([a-z] or [^...]) or `.`.
std::string char_set_gbnf(const CodePointSet& set);
// GBNF matching the JSON string-content encoding of one code point of a
// non-empty `set`: code points that JSON strings may hold raw (not `"`, `\`
// or below 0x20) are matched raw, `"` as \" and `\` as \\, control
// characters as \b \f \n \r \t or \u00XX. Every accepted encoding decodes to a
// member of `set`. May be an alternation: wrap in ( ) before quantifying.
std::string json_char_set_gbnf(const CodePointSet& set);
// The encoding that json_char_set_gbnf accepts for one code point inside a
// JSON string (raw UTF-8, \", \\, \n, ..., \u001f).
std::string json_escape_code_point(uint32_t code_point);

// Where a regex's matches end up: as the whole output, or inside a JSON
// string (each character JSON-escaped as json_char_set_gbnf describes).
enum class RegexTarget { kRaw, kJsonStringContent };

// The pattern as one GBNF expression (no rules; groups are parenthesized),
// matching exactly the strings that fully match `pattern` (encoded per
// `target`).
StatusOr<std::string> regex_to_gbnf_expression(std::string_view pattern, RegexTarget target);

// A complete grammar: `root ::= <expression>\n`.
StatusOr<std::string> regex_to_gbnf(std::string_view pattern);

}  // namespace strata::structured
