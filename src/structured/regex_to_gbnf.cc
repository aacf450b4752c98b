#include "structured/regex_to_gbnf.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "base/hex.h"
#include "structured/builtin_grammars.h"

namespace strata::structured {
namespace {

constexpr char kHexDigits[] = "0123456789ABCDEF";

std::string hex_escape(uint32_t value, const char* prefix, int num_digits) {
  std::string out = prefix;
  for (int digit_idx = num_digits - 1; digit_idx >= 0; --digit_idx) {
    out += kHexDigits[(value >> (4 * digit_idx)) & 0xF];
  }
  return out;
}

// One code point inside a GBNF class [...].
std::string class_char(uint32_t code_point) {
  if (code_point == '\\') return "\\\\";
  if (code_point == ']' || code_point == '[' || code_point == '^' || code_point == '-') {
    return hex_escape(code_point, "\\x", 2);
  }
  if (code_point < 0x20 || code_point == 0x7F) return hex_escape(code_point, "\\x", 2);
  if (code_point < 0x80) return std::string(1, static_cast<char>(code_point));
  if (code_point <= 0xFFFF) return hex_escape(code_point, "\\u", 4);
  std::string out;
  append_utf8(code_point, out);
  return out;
}

std::string class_ranges(const CodePointSet& set) {
  std::string out;
  for (const CodePointSet::Range& range : set.ranges()) {
    out += class_char(range.first);
    if (range.last == range.first) continue;
    if (range.last != range.first + 1) out += '-';
    out += class_char(range.last);
  }
  return out;
}

std::string encode_code_point(uint32_t code_point, RegexTarget target) {
  if (target == RegexTarget::kJsonStringContent) return json_escape_code_point(code_point);
  std::string out;
  append_utf8(code_point, out);
  return out;
}

// ---- Parse tree ----

struct Node {
  enum class Kind { kEmpty, kChars, kConcat, kAlt, kRepeat };
  Kind kind = Kind::kEmpty;
  CodePointSet chars;          // kChars
  std::vector<Node> children;  // kConcat, kAlt; kRepeat: one child
  int min_count = 1;           // kRepeat
  int max_count = 1;           // kRepeat; -1 = unbounded
};

CodePointSet digit_set() { return CodePointSet::range('0', '9'); }
CodePointSet word_set() {
  CodePointSet set = CodePointSet::range('a', 'z');
  set.add('A', 'Z');
  set.add('0', '9');
  set.add('_', '_');
  return set;
}
CodePointSet space_set() {
  CodePointSet set = CodePointSet::range('\t', '\r');  // \t \n \v \f \r
  set.add(' ', ' ');
  return set;
}

class RegexParser {
 public:
  explicit RegexParser(std::vector<uint32_t> code_points) : text_(std::move(code_points)) {}

  StatusOr<Node> parse() {
    size_t end = text_.size();
    if (end > 0 && text_[0] == '^') pos_ = 1;
    if (end > pos_ && text_[end - 1] == '$') {
      size_t num_backslashes = 0;
      while (end - 1 - num_backslashes > pos_ && text_[end - 2 - num_backslashes] == '\\') {
        ++num_backslashes;
      }
      if (num_backslashes % 2 == 0) --end;
    }
    end_ = end;
    STRATA_ASSIGN_OR_RETURN(Node node, parse_alternation());
    if (pos_ < end_) return error("unbalanced ')'");
    return node;
  }

 private:
  Status error(const std::string& what) const {
    return invalid_argument("regex: " + what + " at offset " + std::to_string(pos_));
  }
  bool at_end() const { return pos_ >= end_; }
  uint32_t peek(size_t ahead = 0) const {
    return pos_ + ahead < end_ ? text_[pos_ + ahead] : 0xFFFFFFFF;
  }

  StatusOr<Node> parse_alternation() {
    Node alt;
    alt.kind = Node::Kind::kAlt;
    while (true) {
      STRATA_ASSIGN_OR_RETURN(Node branch, parse_concat());
      alt.children.push_back(std::move(branch));
      if (at_end() || peek() != '|') break;
      ++pos_;
    }
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  StatusOr<Node> parse_concat() {
    Node concat;
    concat.kind = Node::Kind::kConcat;
    while (!at_end() && peek() != '|' && peek() != ')') {
      STRATA_ASSIGN_OR_RETURN(Node atom, parse_atom());
      STRATA_ASSIGN_OR_RETURN(Node quantified, parse_quantifiers(std::move(atom)));
      concat.children.push_back(std::move(quantified));
    }
    if (concat.children.empty()) return Node{};
    if (concat.children.size() == 1) return std::move(concat.children[0]);
    return concat;
  }

  // Reads {m}, {m,}, {m,n} or {,n} at pos_; nullopt (pos_ unchanged) when
  // the brace does not start a valid quantifier (then it is a literal '{').
  std::optional<std::pair<int64_t, int64_t>> read_braces() {
    size_t cursor = pos_ + 1;
    auto read_number = [&](int64_t& value) {
      bool any = false;
      value = 0;
      while (cursor < end_ && text_[cursor] >= '0' && text_[cursor] <= '9') {
        value = std::min<int64_t>(value * 10 + (text_[cursor] - '0'), int64_t{1} << 40);
        ++cursor;
        any = true;
      }
      return any;
    };
    int64_t min_count = 0;
    int64_t max_count = 0;
    const bool has_min = read_number(min_count);
    if (cursor < end_ && text_[cursor] == '}') {
      if (!has_min) return std::nullopt;
      pos_ = cursor + 1;
      return std::make_pair(min_count, min_count);
    }
    if (cursor >= end_ || text_[cursor] != ',') return std::nullopt;
    ++cursor;
    const bool has_max = read_number(max_count);
    if (cursor >= end_ || text_[cursor] != '}' || (!has_min && !has_max)) return std::nullopt;
    pos_ = cursor + 1;
    return std::make_pair(has_min ? min_count : 0, has_max ? max_count : -1);
  }

  bool at_quantifier() {
    if (at_end()) return false;
    const uint32_t c = peek();
    if (c == '*' || c == '+' || c == '?') return true;
    if (c != '{') return false;
    const size_t saved = pos_;
    const bool valid = read_braces().has_value();
    pos_ = saved;
    return valid;
  }

  StatusOr<Node> parse_quantifiers(Node atom) {
    if (!at_quantifier()) return atom;
    int64_t min_count = 0;
    int64_t max_count = -1;
    const uint32_t c = peek();
    if (c == '{') {
      const auto bounds = read_braces();
      min_count = bounds->first;
      max_count = bounds->second;
      if (min_count > kMaxRegexRepeat || max_count > kMaxRegexRepeat) {
        return error("repetition bound above " + std::to_string(kMaxRegexRepeat));
      }
      if (max_count >= 0 && min_count > max_count) return error("repetition {m,n} with m > n");
    } else {
      ++pos_;
      if (c == '+') min_count = 1;
      if (c == '?') max_count = 1;
    }
    if (!at_end() && peek() == '?') {
      ++pos_;  // lazy: same language
    } else if (!at_end() && peek() == '+') {
      return error("possessive quantifier");
    }
    if (at_quantifier()) return error("multiple repeat");
    Node repeat;
    repeat.kind = Node::Kind::kRepeat;
    repeat.min_count = static_cast<int>(min_count);
    repeat.max_count = static_cast<int>(max_count);
    repeat.children.push_back(std::move(atom));
    return repeat;
  }

  static Node chars_node(CodePointSet set) {
    Node node;
    node.kind = Node::Kind::kChars;
    node.chars = std::move(set);
    return node;
  }

  StatusOr<Node> parse_atom() {
    const uint32_t c = peek();
    switch (c) {
      case '(':
        return parse_group();
      case '[':
        return parse_class();
      case '.': {
        ++pos_;
        CodePointSet set = CodePointSet::range(0, '\n' - 1);
        set.add('\n' + 1, kLastCodePoint);
        return chars_node(std::move(set));
      }
      case '\\': {
        ++pos_;
        STRATA_ASSIGN_OR_RETURN(CodePointSet set, parse_escape(/*in_class=*/false));
        return chars_node(std::move(set));
      }
      case '^':
        return error("'^' anchor (only supported at the start of the pattern)");
      case '$':
        return error("'$' anchor (only supported at the end of the pattern)");
      case '*':
      case '+':
      case '?':
        return error("nothing to repeat");
      case '{':
        if (at_quantifier()) return error("nothing to repeat");
        break;
      default:
        break;
    }
    ++pos_;
    return chars_node(CodePointSet::single(c));
  }

  StatusOr<Node> parse_group() {
    ++pos_;  // '('
    if (peek() == '?') {
      const uint32_t kind = peek(1);
      if (kind == ':') {
        pos_ += 2;
      } else if (kind == '=' || kind == '!') {
        return error("lookahead");
      } else if (kind == '<' && (peek(2) == '=' || peek(2) == '!')) {
        return error("lookbehind");
      } else if (kind == 'P' && peek(2) == '=') {
        return error("backreference (?P=name)");
      } else if (kind == '<' || (kind == 'P' && peek(2) == '<')) {
        pos_ += kind == '<' ? 2 : 3;
        size_t name_length = 0;
        while (!at_end() && peek() != '>') {
          const uint32_t n = peek();
          const bool ok = n == '_' || (n >= 'a' && n <= 'z') || (n >= 'A' && n <= 'Z') ||
                          (name_length > 0 && n >= '0' && n <= '9');
          if (!ok) return error("bad group name");
          ++pos_;
          ++name_length;
        }
        if (at_end() || name_length == 0) return error("bad group name");
        ++pos_;  // '>'
      } else if (kind == '#') {
        return error("comment group (?#...)");
      } else {
        return error("inline flags or unknown group (?" +
                     (kind < 0x80 ? std::string(1, static_cast<char>(kind)) : std::string()) +
                     "...)");
      }
    }
    if (++depth_ > kMaxRegexDepth) {
      return error("groups nested deeper than " + std::to_string(kMaxRegexDepth));
    }
    STRATA_ASSIGN_OR_RETURN(Node inner, parse_alternation());
    --depth_;
    if (at_end() || peek() != ')') return error("missing ')'");
    ++pos_;
    return inner;
  }

  // After the backslash.
  StatusOr<CodePointSet> parse_escape(bool in_class) {
    if (at_end()) return error("trailing backslash");
    const uint32_t c = peek();
    ++pos_;
    switch (c) {
      case 'd':
        return digit_set();
      case 'D':
        return digit_set().complement();
      case 'w':
        return word_set();
      case 'W':
        return word_set().complement();
      case 's':
        return space_set();
      case 'S':
        return space_set().complement();
      case 'n':
        return CodePointSet::single('\n');
      case 't':
        return CodePointSet::single('\t');
      case 'r':
        return CodePointSet::single('\r');
      case 'f':
        return CodePointSet::single('\f');
      case 'v':
        return CodePointSet::single('\v');
      case '0':
        if (!at_end() && peek() >= '0' && peek() <= '9') return error("octal escape");
        return CodePointSet::single(0);
      case 'x':
        return parse_hex(2);
      case 'u':
        return parse_hex(4);
      case 'U':
        return parse_hex(8);
      case 'b':
        if (in_class) return CodePointSet::single('\b');
        return error("word boundary \\b");
      case 'B':
        return error("word boundary \\B");
      case 'A':
      case 'Z':
      case 'z':
      case 'G':
        return error("anchor \\" + std::string(1, static_cast<char>(c)));
      case 'k':
        return error("backreference \\k");
      case 'p':
      case 'P':
        return error("Unicode property \\p");
      case 'c':
        return error("control escape \\c");
      default:
        break;
    }
    if (c >= '1' && c <= '9')
      return error("backreference \\" + std::string(1, static_cast<char>(c)));
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      return error("unknown escape \\" + std::string(1, static_cast<char>(c)));
    }
    return CodePointSet::single(c);
  }

  StatusOr<CodePointSet> parse_hex(int num_digits) {
    uint32_t value = 0;
    for (int digit_idx = 0; digit_idx < num_digits; ++digit_idx) {
      if (at_end() || hex_digit_value(peek()) < 0) return error("bad hex escape");
      value = value * 16 + static_cast<uint32_t>(hex_digit_value(peek()));
      ++pos_;
    }
    if (value > kLastCodePoint) return error("code point above U+10FFFF");
    return CodePointSet::single(value);
  }

  StatusOr<Node> parse_class() {
    ++pos_;  // '['
    bool negate = false;
    if (!at_end() && peek() == '^') {
      negate = true;
      ++pos_;
    }
    CodePointSet set;
    bool first_item = true;
    while (true) {
      if (at_end()) return error("unterminated character class");
      if (peek() == ']' && !first_item) {
        ++pos_;
        break;
      }
      first_item = false;
      STRATA_ASSIGN_OR_RETURN(CodePointSet start, parse_class_item());
      if (peek() == '-' && pos_ + 1 < end_ && peek(1) != ']') {
        ++pos_;
        STRATA_ASSIGN_OR_RETURN(CodePointSet stop, parse_class_item());
        if (start.size() != 1 || stop.size() != 1) return error("bad character range");
        const uint32_t first = start.ranges()[0].first;
        const uint32_t last = stop.ranges()[0].first;
        if (last < first) return error("bad character range (end before start)");
        set.add(first, last);
      } else {
        set.add(start);
      }
    }
    if (negate) set = set.complement();
    if (set.empty()) return error("character class that matches nothing");
    return chars_node(std::move(set));
  }

  StatusOr<CodePointSet> parse_class_item() {
    const uint32_t c = peek();
    ++pos_;
    if (c == '\\') return parse_escape(/*in_class=*/true);
    return CodePointSet::single(c);
  }

  std::vector<uint32_t> text_;
  size_t pos_ = 0;
  size_t end_ = 0;
  int depth_ = 0;
};

// ---- Nullable repetitions ----
// GBNF engines reject x* when x can match the empty string (the repetition
// could loop without consuming input), so x{m,n} with nullable x becomes
// x'{0,n}, where x' is x without the empty string: same language.

bool is_nullable(const Node& node) {
  switch (node.kind) {
    case Node::Kind::kEmpty:
      return true;
    case Node::Kind::kChars:
      return false;
    case Node::Kind::kConcat:
      return std::all_of(node.children.begin(), node.children.end(), is_nullable);
    case Node::Kind::kAlt:
      return std::any_of(node.children.begin(), node.children.end(), is_nullable);
    case Node::Kind::kRepeat:
      return node.min_count == 0 || is_nullable(node.children[0]);
  }
  return false;
}

Node concat_of(std::vector<Node> parts) {
  if (parts.size() == 1) return std::move(parts[0]);
  Node concat;
  concat.kind = Node::Kind::kConcat;
  concat.children = std::move(parts);
  return concat;
}

// `node` without the empty string; nullopt when it matches only the empty
// string. Repetitions inside are already normalized (their children are not
// nullable).
// Concatenations of nullable parts expand quadratically; kMaxNullableParts
// bounds the parts one repetition may expand (else an error).
constexpr int kMaxNullableParts = 16;

std::optional<Node> without_empty(const Node& node, int& parts_left) {
  switch (node.kind) {
    case Node::Kind::kEmpty:
      return std::nullopt;
    case Node::Kind::kChars:
      return node;
    case Node::Kind::kRepeat: {
      if (node.max_count == 0) return std::nullopt;
      Node repeat = node;
      repeat.min_count = std::max(repeat.min_count, 1);
      return repeat;
    }
    case Node::Kind::kAlt: {
      Node alt;
      alt.kind = Node::Kind::kAlt;
      for (const Node& child : node.children) {
        if (std::optional<Node> part = without_empty(child, parts_left)) {
          alt.children.push_back(*part);
        }
      }
      if (alt.children.empty()) return std::nullopt;
      if (alt.children.size() == 1) return std::move(alt.children[0]);
      return alt;
    }
    case Node::Kind::kConcat: {
      // ne(a B) = ne(a) B | ne(B) when a is nullable, else a B.
      if (!is_nullable(node)) return node;
      parts_left -= static_cast<int>(node.children.size());
      if (parts_left < 0) return std::nullopt;
      const Node& head = node.children[0];
      std::vector<Node> rest(node.children.begin() + 1, node.children.end());
      Node alt;
      alt.kind = Node::Kind::kAlt;
      if (std::optional<Node> head_part = without_empty(head, parts_left)) {
        std::vector<Node> parts = {*head_part};
        parts.insert(parts.end(), rest.begin(), rest.end());
        alt.children.push_back(concat_of(std::move(parts)));
      }
      if (!rest.empty()) {
        if (std::optional<Node> rest_part = without_empty(concat_of(rest), parts_left)) {
          alt.children.push_back(*rest_part);
        }
      }
      if (alt.children.empty()) return std::nullopt;
      if (alt.children.size() == 1) return std::move(alt.children[0]);
      return alt;
    }
  }
  return std::nullopt;
}

Status normalize_repeats(Node& node) {
  for (Node& child : node.children) STRATA_RETURN_IF_ERROR(normalize_repeats(child));
  if (node.kind != Node::Kind::kRepeat || !is_nullable(node.children[0])) {
    return Status::ok_status();
  }
  int parts_left = kMaxNullableParts;
  std::optional<Node> body = without_empty(node.children[0], parts_left);
  if (parts_left < 0) {
    return invalid_argument("regex: repetition of a sequence of more than " +
                            std::to_string(kMaxNullableParts) + " parts that can all be empty");
  }
  if (!body) {
    node = Node{};
    return Status::ok_status();
  }
  node.children[0] = std::move(*body);
  node.min_count = 0;
  return Status::ok_status();
}

// ---- Emission ----

enum class Precedence { kEmpty, kAtom, kSequence, kAlternation };

struct Expr {
  std::string text;
  Precedence precedence = Precedence::kEmpty;
};

std::string parenthesized(const Expr& expr) {
  if (expr.precedence == Precedence::kAtom) return expr.text;
  return "( " + expr.text + " )";
}

std::string quantifier(int min_count, int max_count) {
  if (min_count == 0 && max_count == 1) return "?";
  if (min_count == 0 && max_count < 0) return "*";
  if (min_count == 1 && max_count < 0) return "+";
  if (max_count < 0) return "{" + std::to_string(min_count) + ",}";
  if (min_count == max_count) return "{" + std::to_string(min_count) + "}";
  return "{" + std::to_string(min_count) + "," + std::to_string(max_count) + "}";
}

Expr literal_expr(const std::string& bytes, size_t num_code_points) {
  return {gbnf_literal(bytes), num_code_points == 1 ? Precedence::kAtom : Precedence::kSequence};
}

Expr emit(const Node& node, RegexTarget target);

Expr emit_chars(const CodePointSet& set, RegexTarget target) {
  if (set.size() == 1) {
    return literal_expr(encode_code_point(set.ranges()[0].first, target), 1);
  }
  if (target == RegexTarget::kRaw) return {char_set_gbnf(set), Precedence::kAtom};
  std::string text = json_char_set_gbnf(set);
  const bool is_alternation = text.find(" | ") != std::string::npos;
  return {std::move(text), is_alternation ? Precedence::kAlternation : Precedence::kAtom};
}

Expr emit_concat(const Node& node, RegexTarget target) {
  std::vector<Expr> parts;
  std::string pending_literal;
  size_t pending_code_points = 0;
  auto flush = [&] {
    if (pending_code_points == 0) return;
    parts.push_back(literal_expr(pending_literal, pending_code_points));
    pending_literal.clear();
    pending_code_points = 0;
  };
  for (const Node& child : node.children) {
    if (child.kind == Node::Kind::kChars && child.chars.size() == 1) {
      pending_literal += encode_code_point(child.chars.ranges()[0].first, target);
      ++pending_code_points;
      continue;
    }
    flush();
    Expr part = emit(child, target);
    if (part.precedence != Precedence::kEmpty) parts.push_back(std::move(part));
  }
  flush();
  if (parts.empty()) return {};
  if (parts.size() == 1) return parts[0];
  Expr out{"", Precedence::kSequence};
  for (const Expr& part : parts) {
    if (!out.text.empty()) out.text += ' ';
    out.text += part.precedence == Precedence::kAlternation ? parenthesized(part) : part.text;
  }
  return out;
}

Expr emit_alternation(const Node& node, RegexTarget target) {
  std::vector<Expr> branches;
  bool has_empty = false;
  for (const Node& child : node.children) {
    Expr branch = emit(child, target);
    if (branch.precedence == Precedence::kEmpty) {
      has_empty = true;
    } else {
      branches.push_back(std::move(branch));
    }
  }
  if (branches.empty()) return {};
  Expr out = branches[0];
  if (branches.size() > 1) {
    out = {"", Precedence::kAlternation};
    for (const Expr& branch : branches) {
      if (!out.text.empty()) out.text += " | ";
      out.text += branch.text;
    }
  }
  if (has_empty) out = {parenthesized(out) + "?", Precedence::kSequence};
  return out;
}

Expr emit(const Node& node, RegexTarget target) {
  switch (node.kind) {
    case Node::Kind::kEmpty:
      return {};
    case Node::Kind::kChars:
      return emit_chars(node.chars, target);
    case Node::Kind::kConcat:
      return emit_concat(node, target);
    case Node::Kind::kAlt:
      return emit_alternation(node, target);
    case Node::Kind::kRepeat: {
      if (node.max_count == 0) return {};
      const Expr child = emit(node.children[0], target);
      if (child.precedence == Precedence::kEmpty) return {};
      if (node.min_count == 1 && node.max_count == 1) return child;
      // Not an atom: quantifying it again needs parentheses ("a"** is not GBNF).
      return {parenthesized(child) + quantifier(node.min_count, node.max_count),
              Precedence::kSequence};
    }
  }
  return {};
}

}  // namespace

// ---- UTF-8 ----

size_t utf8_sequence_length(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t min_value = 0;
  uint32_t value = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    min_value = 0x80;
    value = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    min_value = 0x800;
    value = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    min_value = 0x10000;
    value = lead & 0x07;
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  for (size_t byte_idx = 1; byte_idx < length; ++byte_idx) {
    const auto byte = static_cast<unsigned char>(text[pos + byte_idx]);
    if ((byte & 0xC0) != 0x80) return 0;
    value = (value << 6) | (byte & 0x3F);
  }
  if (value < min_value || value > kLastCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
    return 0;
  }
  return length;
}

StatusOr<std::vector<uint32_t>> decode_utf8(std::string_view text) {
  std::vector<uint32_t> code_points;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t length = utf8_sequence_length(text, pos);
    if (length == 0) {
      return invalid_argument("invalid UTF-8 at byte " + std::to_string(pos));
    }
    auto lead = static_cast<unsigned char>(text[pos]);
    uint32_t value = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t byte_idx = 1; byte_idx < length; ++byte_idx) {
      value = (value << 6) | (static_cast<unsigned char>(text[pos + byte_idx]) & 0x3F);
    }
    code_points.push_back(value);
    pos += length;
  }
  return code_points;
}

void append_utf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// ---- CodePointSet ----

CodePointSet CodePointSet::range(uint32_t first, uint32_t last) {
  CodePointSet set;
  set.add(first, last);
  return set;
}

void CodePointSet::add(uint32_t first, uint32_t last) {
  STRATA_CHECK(first <= last && last <= kLastCodePoint) << first << ".." << last;
  std::vector<Range> merged;
  merged.reserve(ranges_.size() + 1);
  bool placed = false;
  for (const Range& range : ranges_) {
    if (range.last + 1 < first) {
      merged.push_back(range);
    } else if (last + 1 < range.first) {
      if (!placed) merged.push_back({first, last});
      placed = true;
      merged.push_back(range);
    } else {
      first = std::min(first, range.first);
      last = std::max(last, range.last);
    }
  }
  if (!placed) merged.push_back({first, last});
  ranges_ = std::move(merged);
}

void CodePointSet::add(const CodePointSet& other) {
  for (const Range& range : other.ranges_) add(range.first, range.last);
}

CodePointSet CodePointSet::complement() const {
  CodePointSet out;
  uint32_t next = 0;
  for (const Range& range : ranges_) {
    if (range.first > next) out.ranges_.push_back({next, range.first - 1});
    next = range.last + 1;
  }
  if (next <= kLastCodePoint) out.ranges_.push_back({next, kLastCodePoint});
  return out;
}

CodePointSet CodePointSet::intersect(const CodePointSet& other) const {
  CodePointSet either_missing = complement();
  either_missing.add(other.complement());
  return either_missing.complement();
}

bool CodePointSet::contains(uint32_t code_point) const {
  for (const Range& range : ranges_) {
    if (code_point >= range.first && code_point <= range.last) return true;
  }
  return false;
}

uint64_t CodePointSet::size() const {
  uint64_t total = 0;
  for (const Range& range : ranges_) total += uint64_t{range.last} - range.first + 1;
  return total;
}

// ---- GBNF ----

std::string char_set_gbnf(const CodePointSet& set) {
  STRATA_CHECK(!set.empty());
  if (set.size() == uint64_t{kLastCodePoint} + 1) return ".";
  if (set.size() == 1) {
    std::string bytes;
    append_utf8(set.ranges()[0].first, bytes);
    return gbnf_literal(bytes);
  }
  const CodePointSet inverse = set.complement();
  const bool negate =
      inverse.ranges().size() < set.ranges().size() ||
      (inverse.ranges().size() == set.ranges().size() && set.contains(kLastCodePoint));
  if (negate) return "[^" + class_ranges(inverse) + "]";
  return "[" + class_ranges(set) + "]";
}

std::string json_escape_code_point(uint32_t code_point) {
  switch (code_point) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (code_point < 0x20) {
    static constexpr char kLowerHex[] = "0123456789abcdef";
    return std::string("\\u00") + kLowerHex[code_point >> 4] + kLowerHex[code_point & 0xF];
  }
  std::string out;
  append_utf8(code_point, out);
  return out;
}

std::string json_char_set_gbnf(const CodePointSet& set) {
  STRATA_CHECK(!set.empty());
  CodePointSet raw_allowed = CodePointSet::range(0x20, 0x21);
  raw_allowed.add(0x23, 0x5B);
  raw_allowed.add(0x5D, kLastCodePoint);
  std::vector<std::string> alternatives;
  const CodePointSet raw = set.intersect(raw_allowed);
  if (!raw.empty()) alternatives.push_back(char_set_gbnf(raw));
  if (set.contains('"')) alternatives.push_back(gbnf_literal("\\\""));
  if (set.contains('\\')) alternatives.push_back(gbnf_literal("\\\\"));
  const CodePointSet controls = set.intersect(CodePointSet::range(0, 0x1F));
  if (controls.size() == 0x20) {
    alternatives.push_back("\"\\\\\" ( [bfnrt] | \"u00\" [01] [0-9a-fA-F] )");
  } else {
    for (const CodePointSet::Range& range : controls.ranges()) {
      for (uint32_t code_point = range.first; code_point <= range.last; ++code_point) {
        alternatives.push_back(gbnf_literal(json_escape_code_point(code_point)));
      }
    }
  }
  std::string out;
  for (const std::string& alternative : alternatives) {
    if (!out.empty()) out += " | ";
    out += alternative;
  }
  return out;
}

StatusOr<std::string> regex_to_gbnf_expression(std::string_view pattern, RegexTarget target) {
  if (pattern.size() > kMaxRegexBytes) {
    return invalid_argument("regex: pattern has " + std::to_string(pattern.size()) +
                            " bytes; at most " + std::to_string(kMaxRegexBytes) + " allowed");
  }
  StatusOr<std::vector<uint32_t>> code_points = decode_utf8(pattern);
  if (!code_points.ok()) return code_points.status().with_prefix("regex");
  RegexParser parser(std::move(code_points).value());
  STRATA_ASSIGN_OR_RETURN(Node tree, parser.parse());
  STRATA_RETURN_IF_ERROR(normalize_repeats(tree));
  Expr expr = emit(tree, target);
  if (expr.precedence == Precedence::kEmpty) return std::string("\"\"");
  return std::move(expr.text);
}

StatusOr<std::string> regex_to_gbnf(std::string_view pattern) {
  STRATA_ASSIGN_OR_RETURN(std::string expression,
                          regex_to_gbnf_expression(pattern, RegexTarget::kRaw));
  return "root ::= " + expression + "\n";
}

}  // namespace strata::structured
