#include "structured/gbnf_parser.h"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/hex.h"

namespace strata::structured {
namespace {

using Sequence = std::vector<GrammarElement>;
using Alternatives = std::vector<Sequence>;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// Recursive-descent parser; every error is returned through error_ (first one wins) and the
// parse unwinds by returning false.
class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

  StatusOr<Grammar> parse(std::string_view root_rule) {
    if (static_cast<int64_t>(text_.size()) > limits_.max_text_bytes) {
      return invalid_argument("grammar is " + std::to_string(text_.size()) +
                              " bytes; the limit is " + std::to_string(limits_.max_text_bytes));
    }
    skip_space(/*newline_ok=*/true);
    while (pos_ < text_.size()) {
      if (!parse_rule()) return invalid_argument(error_);
      skip_space(true);
    }
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (!rules_[r].defined) {
        return invalid_argument(location(rules_[r].first_use) + ": rule '" + rules_[r].name +
                                "' is referenced but never defined");
      }
    }
    auto root = ids_.find(std::string(root_rule));
    if (root == ids_.end()) {
      return invalid_argument("grammar has no '" + std::string(root_rule) + "' rule");
    }
    Grammar g = flatten(root->second);
    STRATA_RETURN_IF_ERROR(g.validate());
    return g;
  }

 private:
  struct RuleDraft {
    std::string name;
    Alternatives alts;
    bool defined = false;
    size_t first_use = 0;   // byte offset of the first reference
    size_t definition = 0;  // byte offset of the definition
  };

  // ---- errors and positions ----
  std::string location(size_t offset) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }
  bool fail_at(size_t offset, const std::string& what) {
    if (error_.empty()) error_ = location(offset) + ": " + what;
    return false;
  }
  bool fail(const std::string& what) { return fail_at(pos_, what); }
  std::string found() const {
    if (pos_ >= text_.size()) return "end of input";
    const char c = text_[pos_];
    if (c == '\n') return "end of line";
    if (static_cast<unsigned char>(c) < 0x20) return "a control character";
    return std::string("'") + c + "'";
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  // At a top-level line end: true (and skips to it) if the next non-blank line starts with '|'.
  bool continues_on_next_line() {
    size_t saved = pos_;
    skip_space(true);
    if (peek() == '|') return true;
    pos_ = saved;
    return false;
  }

  // ---- rules ----
  uint32_t rule_id(const std::string& name, size_t use_offset) {
    auto [it, inserted] = ids_.emplace(name, static_cast<uint32_t>(rules_.size()));
    if (inserted) {
      rules_.push_back({name, {}, false, use_offset, 0});
    }
    return it->second;
  }

  bool new_helper_rule(const std::string& base, Alternatives alts, uint32_t* id) {
    if (static_cast<int64_t>(rules_.size()) >= limits_.max_rules) {
      return fail("grammar expands to more than " + std::to_string(limits_.max_rules) + " rules");
    }
    *id = static_cast<uint32_t>(rules_.size());
    // '~' cannot appear in a user rule name, so helper names never collide.
    rules_.push_back({base + "~" + std::to_string(rules_.size()), std::move(alts), true, 0, 0});
    return true;
  }

  bool count_elements(int64_t n) {
    num_elements_ += n;
    if (num_elements_ > limits_.max_elements) {
      return fail("grammar expands to more than " + std::to_string(limits_.max_elements) +
                  " elements");
    }
    return true;
  }

  bool parse_name(std::string* name) {
    const size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == start) return fail("expected a rule name, found " + found());
    name->assign(text_.substr(start, pos_ - start));
    return true;
  }

  bool parse_rule() {
    const size_t start = pos_;
    std::string name;
    if (!parse_name(&name)) return false;
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=")
      return fail("expected '::=' after rule name, found " + found());
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name, start);
    if (rules_[id].defined) {
      return fail_at(start, "rule '" + name + "' is defined twice (first at " +
                                location(rules_[id].definition) + ")");
    }
    rules_[id].defined = true;
    rules_[id].definition = start;
    current_rule_ = name;
    Alternatives alts;
    if (!parse_alternatives(/*nested=*/false, 0, &alts)) return false;
    rules_[id].alts = std::move(alts);
    skip_space(false);
    if (!at_end() && peek() != '\n' && peek() != '\r') {
      return fail("expected end of line after rule '" + name + "', found " + found());
    }
    return true;
  }

  bool parse_alternatives(bool nested, int depth, Alternatives* alts) {
    for (;;) {
      Sequence seq;
      if (!parse_sequence(nested, depth, &seq)) return false;
      alts->push_back(std::move(seq));
      if (!count_elements(1)) return false;  // the kEnd of this alternative
      skip_space(nested);
      if (peek() != '|' && !nested && (peek() == '\n' || peek() == '\r')) {
        if (!continues_on_next_line()) return true;
      }
      if (peek() != '|') return true;
      ++pos_;
      skip_space(true);
    }
  }

  bool parse_sequence(bool nested, int depth, Sequence* seq) {
    constexpr size_t kNoAtom = ~size_t{0};
    size_t atom_start = kNoAtom;  // where the last repeatable atom begins in *seq
    for (;;) {
      skip_space(nested);
      const char c = peek();
      const size_t here = pos_;
      if (c == '"') {
        atom_start = seq->size();
        if (!parse_literal(seq)) return false;
      } else if (c == '[') {
        atom_start = seq->size();
        if (!parse_class(seq)) return false;
      } else if (c == '.') {
        ++pos_;
        atom_start = seq->size();
        if (!push_char_set(CharSet::from_ranges({{0, kMaxCodePoint}}, false), seq)) return false;
      } else if (c == '(') {
        if (depth + 1 > limits_.max_nesting) {
          return fail("parentheses nest deeper than " + std::to_string(limits_.max_nesting));
        }
        ++pos_;
        skip_space(true);
        Alternatives group;
        if (!parse_alternatives(/*nested=*/true, depth + 1, &group)) return false;
        skip_space(true);
        if (peek() != ')')
          return fail("expected ')' to close the '(' at " + location(here) + ", found " + found());
        ++pos_;
        uint32_t id;
        if (!new_helper_rule(current_rule_, std::move(group), &id)) return false;
        atom_start = seq->size();
        if (!push(seq, {ElementKind::kRuleRef, id})) return false;
      } else if (is_name_char(c)) {
        std::string name;
        if (!parse_name(&name)) return false;
        atom_start = seq->size();
        if (!push(seq, {ElementKind::kRuleRef, rule_id(name, here)})) return false;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (atom_start == kNoAtom) return fail(std::string("'") + c + "' has nothing to repeat");
        if (!parse_repetition(atom_start, seq)) return false;
        atom_start = kNoAtom;
      } else {
        return true;
      }
    }
  }

  bool push(Sequence* seq, GrammarElement e) {
    if (!count_elements(1)) return false;
    seq->push_back(e);
    return true;
  }

  bool push_char_set(CharSet set, Sequence* seq) {
    std::vector<uint32_t> key;
    for (const CodePointRange& r : set.ranges) {
      key.push_back(r.lo);
      key.push_back(r.hi);
    }
    auto [it, inserted] = char_set_ids_.emplace(std::move(key), char_sets_.size());
    if (inserted) char_sets_.push_back(std::move(set));
    return push(seq, {ElementKind::kCharSet, static_cast<uint32_t>(it->second)});
  }

  // ---- characters ----
  bool parse_hex(int digits, uint32_t* value) {
    *value = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = hex_digit_value(static_cast<unsigned char>(peek()));
      if (d < 0) {
        return fail("expected " + std::to_string(digits) + " hex digits, found " + found());
      }
      *value = *value * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (*value > kMaxCodePoint) return fail("code point beyond U+10FFFF");
    return true;
  }

  // One (possibly escaped) character of a literal or class; UTF-8 decoded.
  bool parse_char(uint32_t* cp) {
    if (at_end()) return fail("unexpected end of input");
    const auto b0 = static_cast<unsigned char>(text_[pos_]);
    if (b0 == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n':
          *cp = '\n';
          return true;
        case 't':
          *cp = '\t';
          return true;
        case 'r':
          *cp = '\r';
          return true;
        case 'x':
          return parse_hex(2, cp);
        case 'u':
          return parse_hex(4, cp);
        case 'U':
          return parse_hex(8, cp);
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '\'':
          *cp = static_cast<unsigned char>(e);
          return true;
        default:
          --pos_;
          return fail("unknown escape '\\" + std::string(1, e) +
                      "' (expected one of n t r x u U \\ \" [ ] - ^ / ')");
      }
    }
    int len = b0 < 0x80           ? 1
              : (b0 >> 5) == 0x6  ? 2
              : (b0 >> 4) == 0xE  ? 3
              : (b0 >> 3) == 0x1E ? 4
                                  : 0;
    if (len == 0 || pos_ + len > text_.size()) return fail("invalid UTF-8 in grammar text");
    uint32_t value = len == 1 ? b0 : b0 & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
      const auto b = static_cast<unsigned char>(text_[pos_ + i]);
      if ((b & 0xC0) != 0x80) return fail("invalid UTF-8 in grammar text");
      value = (value << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < kMin[len] || value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
      return fail("invalid UTF-8 in grammar text");
    }
    pos_ += len;
    *cp = value;
    return true;
  }

  bool parse_literal(Sequence* seq) {
    const size_t start = pos_++;
    while (at_end() || peek() != '"') {
      if (at_end()) return fail_at(start, "unterminated string literal (expected '\"')");
      uint32_t cp;
      if (!parse_char(&cp)) return false;
      if (!push_char_set(CharSet::from_ranges({{cp, cp}}, false), seq)) return false;
    }
    ++pos_;
    return true;
  }

  bool parse_class(Sequence* seq) {
    const size_t start = pos_++;
    const bool negate = peek() == '^';
    if (negate) ++pos_;
    std::vector<CodePointRange> ranges;
    while (at_end() || peek() != ']') {
      if (at_end()) return fail_at(start, "unterminated character class (expected ']')");
      uint32_t lo, hi;
      if (!parse_char(&lo)) return false;
      hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        if (!parse_char(&hi)) return false;
        if (hi < lo) return fail("character range is backwards (end before start)");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return push_char_set(CharSet::from_ranges(std::move(ranges), negate), seq);
  }

  // ---- repetition ----
  bool parse_count(int64_t* n) {
    skip_space(true);
    if (peek() < '0' || peek() > '9') return fail("expected a repetition count, found " + found());
    *n = 0;
    while (peek() >= '0' && peek() <= '9') {
      *n = *n * 10 + (peek() - '0');
      ++pos_;
      if (*n > limits_.max_repeat_count) {
        return fail("repetition count exceeds " + std::to_string(limits_.max_repeat_count));
      }
    }
    skip_space(true);
    return true;
  }

  // Replaces the atom at seq[atom_start..] by its repetition.
  bool parse_repetition(size_t atom_start, Sequence* seq) {
    int64_t min = 0, max = -1;  // max -1 = unbounded
    const char op = peek();
    ++pos_;
    if (op == '+') {
      min = 1;
    } else if (op == '?') {
      max = 1;
    } else if (op == '{') {
      if (!parse_count(&min)) return false;
      max = min;
      if (peek() == ',') {
        ++pos_;
        skip_space(true);
        max = -1;
        if (peek() != '}' && !parse_count(&max)) return false;
      }
      if (peek() != '}') return fail("expected '}' to close the repetition, found " + found());
      ++pos_;
      if (max >= 0 && max < min) return fail("repetition {m,n} has n < m");
    }
    // The atom as one element: a multi-element literal becomes a helper rule.
    GrammarElement atom;
    if (seq->size() - atom_start == 1) {
      atom = seq->back();
      --num_elements_;  // pushed again below, once per copy
    } else {
      // The body's elements move into the helper rule (still counted) plus its kEnd.
      uint32_t id;
      Sequence body(seq->begin() + atom_start, seq->end());
      if (!new_helper_rule(current_rule_, {std::move(body)}, &id)) return false;
      atom = {ElementKind::kRuleRef, id};
      if (!count_elements(1)) return false;
    }
    seq->resize(atom_start);
    for (int64_t i = 0; i < min; ++i) {
      if (!push(seq, atom)) return false;
    }
    if (max < 0) {  // star ::= atom star | ""
      uint32_t star;
      if (!new_helper_rule(current_rule_, {}, &star)) return false;
      rules_[star].alts = {{atom, {ElementKind::kRuleRef, star}}, {}};
      if (!count_elements(5) || !push(seq, {ElementKind::kRuleRef, star})) return false;
      return true;
    }
    // opt_k ::= atom opt_{k+1} | "" built from the innermost out.
    std::optional<uint32_t> inner;
    for (int64_t k = max - min; k > 0; --k) {
      Sequence first = {atom};
      if (inner) first.push_back({ElementKind::kRuleRef, *inner});
      uint32_t id;
      if (!count_elements(static_cast<int64_t>(first.size()) + 2)) return false;
      if (!new_helper_rule(current_rule_, {std::move(first), {}}, &id)) return false;
      inner = id;
    }
    if (inner && !push(seq, {ElementKind::kRuleRef, *inner})) return false;
    return true;
  }

  Grammar flatten(uint32_t root) {
    Grammar g;
    g.char_sets = std::move(char_sets_);
    g.root_rule = root;
    g.elements.reserve(static_cast<size_t>(num_elements_));
    for (RuleDraft& rule : rules_) {
      std::vector<uint32_t> starts;
      for (const Sequence& alt : rule.alts) {
        starts.push_back(static_cast<uint32_t>(g.elements.size()));
        g.elements.insert(g.elements.end(), alt.begin(), alt.end());
        g.elements.push_back({ElementKind::kEnd, 0});
      }
      g.rule_alts.push_back(std::move(starts));
      g.rule_names.push_back(std::move(rule.name));
    }
    return g;
  }

  std::string_view text_;
  const GbnfLimits& limits_;
  size_t pos_ = 0;
  std::string error_;
  std::string current_rule_;
  std::vector<RuleDraft> rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<CharSet> char_sets_;
  std::map<std::vector<uint32_t>, size_t> char_set_ids_;
  int64_t num_elements_ = 0;
};

}  // namespace

StatusOr<Grammar> parse_gbnf(std::string_view text, std::string_view root_rule,
                             const GbnfLimits& limits) {
  GbnfParser parser(text, limits);
  return parser.parse(root_rule);
}

}  // namespace strata::structured
