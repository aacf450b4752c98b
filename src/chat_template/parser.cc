#include "chat_template/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "chat_template/error.h"
#include "chat_template/lexer.h"

namespace strata::chat_template {
namespace {

using Kind = Expr::Kind;

bool is_one_of(const std::string& s, std::initializer_list<const char*> options) {
  return std::any_of(options.begin(), options.end(), [&](const char* o) { return s == o; });
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

bool is_closing_tag(const std::string& name) {
  return name == "else" || name == "elif" || name.rfind("end", 0) == 0;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_all() {
    std::string found;
    Body body = parse_body({}, "", 0, &found);
    return body;
  }

 private:
  // ---- token helpers --------------------------------------------------------
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == TokenType::kOperator && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == TokenType::kName && cur().text == name; }

  [[noreturn]] void fail_at(const Token& t, const std::string& message) const {
    throw TemplateError(TemplateError::Kind::kSyntax, message, t.line, t.column);
  }
  [[noreturn]] void fail_expected(const std::string& what) const {
    fail_at(cur(), "expected " + what + ", found " + describe_token(cur()));
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail_expected(std::string("'") + op + "'");
    advance();
  }
  void expect_name(const char* name) {
    if (!is_name(name)) fail_expected(std::string("'") + name + "'");
    advance();
  }
  std::string expect_identifier() {
    if (cur().type != TokenType::kName) fail_expected("a name");
    std::string s = cur().text;
    advance();
    return s;
  }
  void expect_block_end() {
    if (cur().type != TokenType::kBlockEnd) fail_expected("'%}'");
    advance();
  }

  class DepthGuard {
   public:
    explicit DepthGuard(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxParseDepth) {
        p_->fail_at(p_->cur(), "template nesting exceeds " + std::to_string(kMaxParseDepth) + " levels");
      }
    }
    ~DepthGuard() { --p_->depth_; }

   private:
    Parser* p_;
  };

  ExprPtr make(Kind k, const Token& at) { return std::make_unique<Expr>(k, at.line); }

  // ---- statements -----------------------------------------------------------
  // Parses until one of `end_tags` opens a block tag; consumes "{% tag" and
  // stores the tag in *found. At top level (no end tags) stops at EOF.
  Body parse_body(const std::vector<std::string>& end_tags, const std::string& opener,
                  int opener_line, std::string* found) {
    DepthGuard guard(this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == TokenType::kEof) {
        if (end_tags.empty()) return body;
        fail_at(t, "unexpected end of template: expected " + join_names(end_tags) + " to close '" +
                       opener + "' opened on line " + std::to_string(opener_line));
      }
      if (t.type == TokenType::kText) {
        auto s = std::make_unique<Stmt>(Stmt::Kind::kText, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        advance();
      } else if (t.type == TokenType::kVarBegin) {
        body.push_back(parse_output());
      } else if (t.type == TokenType::kBlockBegin) {
        const Token& name = peek();
        if (name.type == TokenType::kName &&
            std::find(end_tags.begin(), end_tags.end(), name.text) != end_tags.end()) {
          *found = name.text;
          advance();
          advance();
          return body;
        }
        if (name.type == TokenType::kName && is_closing_tag(name.text)) {
          std::string message = "unexpected '" + name.text + "'";
          if (!end_tags.empty()) {
            message += "; expected " + join_names(end_tags) + " to close '" + opener +
                       "' opened on line " + std::to_string(opener_line);
          }
          fail_at(name, message);
        }
        body.push_back(parse_statement());
      } else {
        fail_at(t, "unexpected " + describe_token(t));
      }
    }
  }

  StmtPtr parse_output() {
    int line = cur().line;
    advance();
    auto s = std::make_unique<Stmt>(Stmt::Kind::kOutput, line);
    s->expr = parse_tuple();
    if (cur().type != TokenType::kVarEnd) fail_expected("'}}'");
    advance();
    return s;
  }

  StmtPtr parse_statement() {
    advance();  // {%
    const Token& t = cur();
    if (t.type != TokenType::kName) fail_expected("a statement name");
    std::string name = t.text;
    advance();
    if (name == "for") return parse_for(t.line);
    if (name == "if") return parse_if(t.line);
    if (name == "set") return parse_set(t.line);
    if (name == "macro") return parse_macro(t.line);
    if (name == "filter") return parse_filter_block(t.line);
    if (name == "generation") return parse_scope("generation", "endgeneration", t.line);
    if (name == "break" || name == "continue") return parse_loop_control(name, t);
    fail_at(t, "unknown or unsupported tag '" + name + "'");
  }

  StmtPtr parse_loop_control(const std::string& name, const Token& t) {
    if (loop_depth_ == 0) fail_at(t, "'" + name + "' outside of a loop");
    expect_block_end();
    return std::make_unique<Stmt>(name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue,
                                  t.line);
  }

  StmtPtr parse_for(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kFor, line);
    bool paren = is_op("(");
    if (paren) advance();
    s->targets.push_back(expect_identifier());
    while (is_op(",")) {
      advance();
      if (cur().type != TokenType::kName || is_name("in")) break;
      s->targets.push_back(expect_identifier());
    }
    if (paren) expect_op(")");
    expect_name("in");
    s->expr = parse_tuple(/*with_condexpr=*/false);
    if (is_name("if")) {
      advance();
      s->condition = parse_expression();
    }
    if (is_name("recursive")) fail_at(cur(), "recursive loops are not supported");
    expect_block_end();
    std::string found;
    ++loop_depth_;
    s->body = parse_body({"endfor", "else"}, "for", line, &found);
    --loop_depth_;
    if (found == "else") {
      expect_block_end();
      s->else_body = parse_body({"endfor"}, "for", line, &found);
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_if(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kIf, line);
    ExprPtr cond = parse_expression();
    while (true) {
      expect_block_end();
      std::string found;
      Body body = parse_body({"elif", "else", "endif"}, "if", line, &found);
      s->branches.push_back({std::move(cond), std::move(body)});
      if (found == "elif") {
        cond = parse_expression();
        continue;
      }
      if (found == "else") {
        expect_block_end();
        Body else_body = parse_body({"endif"}, "if", line, &found);
        s->branches.push_back({nullptr, std::move(else_body)});
      }
      expect_block_end();
      return s;
    }
  }

  ExprPtr parse_assign_target() {
    const Token& t = cur();
    std::string first = expect_identifier();
    if (is_op(".")) {
      advance();
      auto e = make(Kind::kGetAttr, t);
      auto base = make(Kind::kName, t);
      base->name = first;
      e->args.push_back(std::move(base));
      e->name = expect_identifier();
      return e;
    }
    auto name = make(Kind::kName, t);
    name->name = first;
    if (!is_op(",")) return name;
    auto tuple = make(Kind::kList, t);
    tuple->args.push_back(std::move(name));
    while (is_op(",")) {
      advance();
      if (cur().type != TokenType::kName) break;
      auto n = make(Kind::kName, cur());
      n->name = expect_identifier();
      tuple->args.push_back(std::move(n));
    }
    return tuple;
  }

  StmtPtr parse_set(int line) {
    ExprPtr target = parse_assign_target();
    if (is_op("=")) {
      advance();
      auto s = std::make_unique<Stmt>(Stmt::Kind::kSet, line);
      s->target = std::move(target);
      s->expr = parse_tuple();
      expect_block_end();
      return s;
    }
    if (target->kind != Kind::kName) fail_expected("'='");
    auto s = std::make_unique<Stmt>(Stmt::Kind::kSetBlock, line);
    s->targets.push_back(target->name);
    expect_block_end();
    std::string found;
    s->body = parse_body({"endset"}, "set", line, &found);
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kMacro, line);
    s->macro = std::make_unique<MacroNode>();
    s->macro->name = expect_identifier();
    expect_op("(");
    while (!is_op(")")) {
      if (!s->macro->params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam param;
      param.name = expect_identifier();
      if (is_op("=")) {
        advance();
        param.default_value = parse_expression();
      }
      s->macro->params.push_back(std::move(param));
    }
    advance();
    expect_block_end();
    std::string found;
    int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;
    s->macro->body = parse_body({"endmacro"}, "macro", line, &found);
    loop_depth_ = saved_loop_depth;
    if (cur().type == TokenType::kName) advance();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kFilterBlock, line);
    ExprPtr placeholder = make(Kind::kLiteral, cur());
    s->expr = parse_filter_chain(std::move(placeholder), /*first_needs_pipe=*/false);
    expect_block_end();
    std::string found;
    s->body = parse_body({"endfilter"}, "filter", line, &found);
    expect_block_end();
    return s;
  }

  StmtPtr parse_scope(const char* name, const char* end, int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kScope, line);
    expect_block_end();
    std::string found;
    s->body = parse_body({end}, name, line, &found);
    expect_block_end();
    return s;
  }

  // ---- expressions ----------------------------------------------------------
  // expression ("," expression)* -> a tuple (list) when a comma is present.
  ExprPtr parse_tuple(bool with_condexpr = true) {
    const Token& start = cur();
    ExprPtr first = with_condexpr ? parse_expression() : parse_or();
    if (!is_op(",")) return first;
    auto tuple = make(Kind::kList, start);
    tuple->name = "tuple";
    tuple->args.push_back(std::move(first));
    while (is_op(",")) {
      advance();
      if (is_tuple_end()) break;
      tuple->args.push_back(with_condexpr ? parse_expression() : parse_or());
    }
    return tuple;
  }

  bool is_tuple_end() const {
    TokenType t = cur().type;
    return t == TokenType::kVarEnd || t == TokenType::kBlockEnd || is_op(")") || is_name("in") ||
           is_name("if");
  }

  ExprPtr parse_expression() {
    DepthGuard guard(this);
    const Token& start = cur();
    ExprPtr body = parse_or();
    if (!is_name("if")) return body;
    advance();
    auto e = make(Kind::kCondExpr, start);
    e->args.push_back(parse_or());  // condition
    e->args.push_back(std::move(body));
    if (is_name("else")) {
      advance();
      e->args.push_back(parse_expression());
    } else {
      e->args.push_back(nullptr);
    }
    return e;
  }

  ExprPtr binary(const Token& at, const std::string& op, ExprPtr lhs, ExprPtr rhs) {
    auto e = make(Kind::kBinary, at);
    e->name = op;
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr lhs = parse_and();
    while (is_name("or")) {
      const Token& at = cur();
      advance();
      lhs = binary(at, "or", std::move(lhs), parse_and());
    }
    return lhs;
  }

  ExprPtr parse_and() {
    ExprPtr lhs = parse_not();
    while (is_name("and")) {
      const Token& at = cur();
      advance();
      lhs = binary(at, "and", std::move(lhs), parse_not());
    }
    return lhs;
  }

  ExprPtr parse_not() {
    DepthGuard guard(this);
    if (!is_name("not")) return parse_compare();
    auto e = make(Kind::kUnary, cur());
    advance();
    e->name = "not";
    e->args.push_back(parse_not());
    return e;
  }

  // Returns the comparison operator at the cursor (consuming it), or "".
  std::string take_compare_op() {
    if (cur().type == TokenType::kOperator &&
        is_one_of(cur().text, {"==", "!=", "<", "<=", ">", ">="})) {
      std::string op = cur().text;
      advance();
      return op;
    }
    if (is_name("in")) {
      advance();
      return "in";
    }
    if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
      advance();
      advance();
      return "not in";
    }
    return "";
  }

  ExprPtr parse_compare() {
    const Token& start = cur();
    ExprPtr first = parse_math1();
    std::string op = take_compare_op();
    if (op.empty()) return first;
    auto e = make(Kind::kCompare, start);
    e->args.push_back(std::move(first));
    while (!op.empty()) {
      e->ops.push_back(op);
      e->args.push_back(parse_math1());
      op = take_compare_op();
    }
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr lhs = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = cur();
      std::string op = at.text;
      advance();
      lhs = binary(at, op, std::move(lhs), parse_concat());
    }
    return lhs;
  }

  ExprPtr parse_concat() {
    ExprPtr lhs = parse_math2();
    while (is_op("~")) {
      const Token& at = cur();
      advance();
      lhs = binary(at, "~", std::move(lhs), parse_math2());
    }
    return lhs;
  }

  ExprPtr parse_math2() {
    ExprPtr lhs = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = cur();
      std::string op = at.text;
      advance();
      lhs = binary(at, op, std::move(lhs), parse_pow());
    }
    return lhs;
  }

  ExprPtr parse_pow() {
    ExprPtr lhs = parse_unary(true);
    while (is_op("**")) {
      const Token& at = cur();
      advance();
      lhs = binary(at, "**", std::move(lhs), parse_unary(true));
    }
    return lhs;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(this);
    const Token& start = cur();
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make(Kind::kUnary, start);
      node->name = start.text;
      advance();
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_chain(std::move(node), true);
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case TokenType::kName: return parse_name();
      case TokenType::kString: {
        auto e = make(Kind::kLiteral, t);
        std::string s;
        while (cur().type == TokenType::kString) {  // adjacent literals concatenate
          s += cur().text;
          advance();
        }
        e->literal = Value::string(std::move(s));
        return e;
      }
      case TokenType::kInteger: return parse_number(t, false);
      case TokenType::kFloat: return parse_number(t, true);
      default: break;
    }
    if (is_op("(")) {
      advance();
      if (is_op(")")) {
        advance();
        ExprPtr empty = make(Kind::kList, t);
        empty->name = "tuple";
        return empty;
      }
      ExprPtr inner = parse_tuple();
      expect_op(")");
      return inner;
    }
    if (is_op("[")) return parse_list();
    if (is_op("{")) return parse_dict();
    fail_expected("an expression");
  }

  ExprPtr parse_name() {
    const Token& t = cur();
    auto e = make(Kind::kLiteral, t);
    advance();
    if (t.text == "true" || t.text == "True") {
      e->literal = Value::boolean(true);
    } else if (t.text == "false" || t.text == "False") {
      e->literal = Value::boolean(false);
    } else if (t.text == "none" || t.text == "None") {
      e->literal = Value::none();
    } else {
      e->kind = Kind::kName;
      e->name = t.text;
    }
    return e;
  }

  ExprPtr parse_number(const Token& t, bool is_float) {
    auto e = make(Kind::kLiteral, t);
    errno = 0;
    if (is_float) {
      e->literal = Value::floating(std::strtod(t.text.c_str(), nullptr));
    } else {
      long long v = std::strtoll(t.text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail_at(t, "integer literal " + t.text + " does not fit in 64 bits");
      e->literal = Value::integer(v);
    }
    advance();
    return e;
  }

  ExprPtr parse_list() {
    auto e = make(Kind::kList, cur());
    advance();
    while (!is_op("]")) {
      if (!e->args.empty()) {
        expect_op(",");
        if (is_op("]")) break;
      }
      e->args.push_back(parse_expression());
    }
    advance();
    return e;
  }

  ExprPtr parse_dict() {
    auto e = make(Kind::kDict, cur());
    advance();
    while (!is_op("}")) {
      if (!e->args.empty()) {
        expect_op(",");
        if (is_op("}")) break;
      }
      e->args.push_back(parse_expression());
      expect_op(":");
      e->args.push_back(parse_expression());
    }
    advance();
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      const Token& t = cur();
      if (is_op(".")) {
        advance();
        auto e = make(Kind::kGetAttr, t);
        if (cur().type == TokenType::kInteger) {
          e->kind = Kind::kGetItem;
          e->args.push_back(std::move(node));
          e->args.push_back(parse_number(cur(), false));
        } else {
          e->name = expect_identifier();
          e->args.push_back(std::move(node));
        }
        node = std::move(e);
      } else if (is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node), Kind::kCall, "");
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_slice_part() {
    if (is_op(":") || is_op("]")) return nullptr;
    return parse_expression();
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& t = cur();
    advance();
    ExprPtr first = parse_slice_part();
    if (!is_op(":")) {
      if (first == nullptr) fail_expected("an index");
      auto e = make(Kind::kGetItem, t);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(first));
      expect_op("]");
      return e;
    }
    auto e = make(Kind::kSlice, t);
    e->args.push_back(std::move(node));
    e->args.push_back(std::move(first));
    advance();
    e->args.push_back(parse_slice_part());
    ExprPtr step;
    if (is_op(":")) {
      advance();
      step = parse_slice_part();
    }
    e->args.push_back(std::move(step));
    expect_op("]");
    return e;
  }

  // Parses "(args, kw=value)" into a node of `kind` whose args[0] is `subject`.
  ExprPtr parse_call(ExprPtr subject, Kind kind, const std::string& name) {
    auto e = make(kind, cur());
    e->name = name;
    e->args.push_back(std::move(subject));
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) {
        expect_op(",");
        if (is_op(")")) break;
      }
      first = false;
      if (cur().type == TokenType::kName && peek().type == TokenType::kOperator &&
          peek().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        e->kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!e->kwargs.empty()) fail_at(cur(), "positional argument after keyword argument");
        e->args.push_back(parse_expression());
      }
    }
    advance();
    return e;
  }

  std::string parse_dotted_name() {
    std::string name = expect_identifier();
    while (is_op(".")) {
      advance();
      name += '.';
      name += expect_identifier();
    }
    return name;
  }

  ExprPtr parse_filter_chain(ExprPtr node, bool first_needs_pipe) {
    bool need_pipe = first_needs_pipe;
    while (true) {
      if (need_pipe && is_op("|")) {
        advance();
      } else if (need_pipe && is_name("is")) {
        node = parse_test(std::move(node));
        continue;
      } else if (need_pipe) {
        return node;
      }
      need_pipe = true;
      node = parse_filter(std::move(node));
    }
  }

  ExprPtr parse_filter(ExprPtr node) {
    const Token& t = cur();
    std::string name = parse_dotted_name();
    if (is_op("(")) return parse_call(std::move(node), Kind::kFilter, name);
    auto e = make(Kind::kFilter, t);
    e->name = name;
    e->args.push_back(std::move(node));
    return e;
  }

  bool starts_test_argument() const {
    const Token& t = cur();
    if (t.type == TokenType::kName) return !is_one_of(t.text, {"else", "or", "and", "is", "if"});
    return t.type == TokenType::kString || t.type == TokenType::kInteger ||
           t.type == TokenType::kFloat || is_op("[") || is_op("{");
  }

  ExprPtr parse_test(ExprPtr node) {
    const Token& t = cur();
    advance();  // is
    bool negated = false;
    if (is_name("not")) {
      negated = true;
      advance();
    }
    std::string name = parse_dotted_name();
    ExprPtr e;
    if (is_op("(")) {
      e = parse_call(std::move(node), Kind::kTest, name);
    } else {
      e = make(Kind::kTest, t);
      e->name = name;
      e->args.push_back(std::move(node));
      if (starts_test_argument()) e->args.push_back(parse_postfix(parse_primary()));
    }
    e->negated = negated;
    return e;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) {
  LexOptions options;
  return Parser(lex(source, options)).parse_all();
}

}  // namespace strata::chat_template
