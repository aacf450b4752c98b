// AST of a parsed chat template: expressions (Expr) and statements (Stmt).
//
// Built once by the parser and never modified afterwards, so any number of
// threads may evaluate the same tree concurrently. Every node records the
// 1-based source line it came from, for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat_template/value.h"

namespace strata::chat_template {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    kLiteral,   // literal
    kName,      // name
    kList,      // args = items; name == "tuple" for tuples
    kDict,      // args = key0, value0, key1, value1, ...
    kGetAttr,   // args[0].name
    kGetItem,   // args[0][args[1]]
    kSlice,     // args[0][args[1]:args[2]:args[3]] (missing parts are null)
    kCall,      // args[0](args[1..], kwargs)
    kFilter,    // args[0] | name(args[1..], kwargs)
    kTest,      // args[0] is [not] name(args[1..])
    kUnary,     // name in {"-", "+", "not"} applied to args[0]
    kBinary,    // args[0] name args[1]; name in {+,-,*,/,//,%,**,~,and,or}
    kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ... (chained)
    kCondExpr,  // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0;
  Value literal;
  std::string name;
  bool negated = false;  // kTest: "is not"
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // kCompare

  Expr(Kind k, int l) : kind(k), line(l) {}
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct MacroNode {
  std::string name;
  std::vector<MacroParam> params;
  Body body;
};

struct IfBranch {
  ExprPtr condition;  // null for the final else
  Body body;
};

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches
    kFor,       // for targets in expr [if condition]: body [else else_body]
    kSet,       // set target = expr (target: kName, kList of names, or kGetAttr)
    kSetBlock,  // set targets[0] %}body{% endset (captures output)
    kMacro,     // macro definition
    kFilterBlock,  // filter expr (a kFilter over a placeholder) applied to body output
    kBreak,
    kContinue,
    kScope,     // body rendered as is ({% generation %})
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr target;
  ExprPtr condition;
  std::vector<std::string> targets;
  std::vector<IfBranch> branches;
  Body body;
  Body else_body;
  std::unique_ptr<MacroNode> macro;

  Stmt(Kind k, int l) : kind(k), line(l) {}
};

// Parse-time bound on nested expressions/blocks (render-time bounds: limits.h).
inline constexpr int kMaxParseDepth = 200;

}  // namespace strata::chat_template
