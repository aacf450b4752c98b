// Grammar: a context-free grammar over Unicode code points in the flat form
// the matcher runs on (what gbnf_parser.h produces).
//
// Layout: every alternative of every rule is a run of elements in one flat
// array, ended by a kEnd element. A "position" is an index into that array;
// the matcher's stack frames are positions. Repetitions (*, +, ?, {m,n}) and
// groups have already been expanded into helper rules, string literals into
// one single-code-point character set per character.
//
// Invariants after validate(): every rule has at least one alternative, every
// rule reference names an existing rule, `root_rule` exists, and no rule can
// reach itself without consuming a code point (no left recursion, direct or
// through nullable rules), so expanding rule references always terminates.
//
// Thread-safety: plain data; immutable once built and shared read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::structured {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Inclusive code point range [lo, hi].
struct CodePointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

// A set of code points: sorted, disjoint, non-adjacent ranges.
struct CharSet {
  std::vector<CodePointRange> ranges;

  bool contains(uint32_t cp) const;
  // True if some code point in [lo, hi] is in the set.
  bool intersects(uint32_t lo, uint32_t hi) const;
  // Sorts and merges `ranges` into the canonical form; `negate` complements
  // the result within [0, kMaxCodePoint].
  static CharSet from_ranges(std::vector<CodePointRange> ranges, bool negate);
};

enum class ElementKind : uint8_t {
  kCharSet,  // value = index into Grammar::char_sets; matches one code point
  kRuleRef,  // value = rule id
  kEnd,      // end of an alternative
};

struct GrammarElement {
  ElementKind kind = ElementKind::kEnd;
  uint32_t value = 0;
};

struct Grammar {
  std::vector<CharSet> char_sets;
  std::vector<GrammarElement> elements;          // all alternatives, each ended by kEnd
  std::vector<std::vector<uint32_t>> rule_alts;  // [num_rules][num_alts] start positions
  std::vector<std::string> rule_names;           // [num_rules]; helpers get generated names
  uint32_t root_rule = 0;

  int64_t num_rules() const { return static_cast<int64_t>(rule_alts.size()); }
  // Checks the invariants above; invalid_argument names the offending rule
  // (and, for left recursion, the cycle).
  Status validate() const;
};

}  // namespace strata::structured
