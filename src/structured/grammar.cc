#include "structured/grammar.h"

#include <algorithm>

namespace strata::structured {

bool CharSet::contains(uint32_t cp) const { return intersects(cp, cp); }

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  // First range whose end is >= lo.
  auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                             [](const CodePointRange& r, uint32_t v) { return r.hi < v; });
  return it != ranges.end() && it->lo <= hi;
}

CharSet CharSet::from_ranges(std::vector<CodePointRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  CharSet merged;
  for (const CodePointRange& r : ranges) {
    if (!merged.ranges.empty() && r.lo <= merged.ranges.back().hi + 1) {
      merged.ranges.back().hi = std::max(merged.ranges.back().hi, r.hi);
    } else {
      merged.ranges.push_back(r);
    }
  }
  if (!negate) return merged;
  CharSet complement;
  uint32_t next = 0;
  for (const CodePointRange& r : merged.ranges) {
    if (r.lo > next) complement.ranges.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) complement.ranges.push_back({next, kMaxCodePoint});
  return complement;
}

namespace {

// Rules that can match the empty string (fixpoint over all alternatives).
std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rule_alts.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rule_alts.size(); ++r) {
      if (nullable[r]) continue;
      for (uint32_t pos : g.rule_alts[r]) {
        bool all = true;
        for (; g.elements[pos].kind != ElementKind::kEnd; ++pos) {
          const GrammarElement& e = g.elements[pos];
          if (e.kind == ElementKind::kCharSet || !nullable[e.value]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// For every rule, the rules it can call before consuming anything.
std::vector<std::vector<uint32_t>> left_calls(const Grammar& g, const std::vector<bool>& nullable) {
  std::vector<std::vector<uint32_t>> calls(g.rule_alts.size());
  for (size_t r = 0; r < g.rule_alts.size(); ++r) {
    for (uint32_t pos : g.rule_alts[r]) {
      for (; g.elements[pos].kind == ElementKind::kRuleRef; ++pos) {
        calls[r].push_back(g.elements[pos].value);
        if (!nullable[g.elements[pos].value]) break;
      }
    }
    std::sort(calls[r].begin(), calls[r].end());
    calls[r].erase(std::unique(calls[r].begin(), calls[r].end()), calls[r].end());
  }
  return calls;
}

// Iterative DFS for a cycle in the left-call graph; returns it as "a -> b -> a" or "".
std::string find_left_cycle(const Grammar& g, const std::vector<std::vector<uint32_t>>& calls) {
  enum : uint8_t { kNew, kActive, kDone };
  std::vector<uint8_t> color(calls.size(), kNew);
  std::vector<std::pair<uint32_t, size_t>> path;  // (rule, next edge index)
  for (uint32_t start = 0; start < calls.size(); ++start) {
    if (color[start] != kNew) continue;
    path.push_back({start, 0});
    color[start] = kActive;
    while (!path.empty()) {
      auto& [rule, edge] = path.back();
      if (edge == calls[rule].size()) {
        color[rule] = kDone;
        path.pop_back();
        continue;
      }
      const uint32_t next = calls[rule][edge++];
      if (color[next] == kActive) {
        std::string cycle;
        size_t i = 0;
        while (path[i].first != next) ++i;
        for (; i < path.size(); ++i) cycle += g.rule_names[path[i].first] + " -> ";
        return cycle + g.rule_names[next];
      }
      if (color[next] == kNew) {
        color[next] = kActive;
        path.push_back({next, 0});
      }
    }
  }
  return "";
}

}  // namespace

Status Grammar::validate() const {
  if (rule_alts.empty() || root_rule >= rule_alts.size()) {
    return invalid_argument("grammar has no root rule");
  }
  for (size_t r = 0; r < rule_alts.size(); ++r) {
    if (rule_alts[r].empty()) {
      return invalid_argument("grammar rule '" + rule_names[r] + "' has no alternatives");
    }
    for (uint32_t pos : rule_alts[r]) {
      for (;; ++pos) {
        if (pos >= elements.size()) {
          return invalid_argument("grammar rule '" + rule_names[r] + "' runs past the end");
        }
        const GrammarElement& e = elements[pos];
        if (e.kind == ElementKind::kEnd) break;
        if (e.kind == ElementKind::kRuleRef && e.value >= rule_alts.size()) {
          return invalid_argument("grammar rule '" + rule_names[r] + "' refers to rule id " +
                                  std::to_string(e.value) + " which does not exist");
        }
        if (e.kind == ElementKind::kCharSet && e.value >= char_sets.size()) {
          return invalid_argument("grammar rule '" + rule_names[r] +
                                  "' refers to a missing "
                                  "character set");
        }
      }
    }
  }
  const std::string cycle = find_left_cycle(*this, left_calls(*this, nullable_rules(*this)));
  if (!cycle.empty()) {
    return invalid_argument("grammar is left-recursive (" + cycle +
                            " can repeat without consuming input); rewrite the rule with "
                            "right recursion or a repetition");
  }
  return Status::ok_status();
}

}  // namespace strata::structured
