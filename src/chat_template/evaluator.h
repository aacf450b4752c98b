// Evaluator: renders an AST (ast.h) against a root dict of variables, with
// jinja2's semantics under transformers' environment: default Undefined,
// immutable sandbox, loop controls, for-loop scoping (each iteration gets its
// own scope; `set` inside a loop does not leak out), macros.
//
// One Evaluator renders one template once, on one thread; the AST it reads is
// shared and immutable. Errors are thrown as TemplateError and turned into a
// Status by ChatTemplate::render.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chat_template/ast.h"
#include "chat_template/limits.h"
#include "chat_template/value.h"

namespace strata::chat_template {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, or null when absent.
  const Value* get(size_t index, const char* name) const;
};

class Evaluator {
 public:
  Evaluator(Dict globals, const RenderLimits& limits);
  // Empties every namespace the template assigned to (see written_namespaces_).
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  const RenderLimits& limits() const { return limits_; }

  // Renders `body` at top level with `variables` as the template context.
  std::string render(const Body& body, const Dict& variables);

  // Calls a macro or builtin function value (used by filters such as map).
  Value call(const Value& callee, const CallArgs& args, int line);

  // Counts one unit of work; throws when the step budget is spent.
  void count_step(int line);

 private:
  struct Scope {
    std::unordered_map<std::string, Value> vars;
    Scope* parent = nullptr;
  };
  enum class Flow { kNormal, kBreak, kContinue };

  // Statements.
  Flow exec_body(const Body& body, std::string& out);
  Flow exec(const Stmt& stmt, std::string& out);
  void exec_if(const Stmt& stmt, std::string& out, Flow* flow);
  void exec_for(const Stmt& stmt, std::string& out);
  void assign_loop_targets(const Stmt& stmt, const Value& item);
  void exec_set(const Stmt& stmt);
  void exec_filter_block(const Stmt& stmt, std::string& out);
  void assign(const Expr& target, const Value& value, int line);
  void append(std::string& out, const std::string& text, int line);

  // Expressions.
  Value eval(const Expr& expr);
  Value eval_name(const Expr& expr);
  Value eval_list(const Expr& expr);
  Value eval_dict(const Expr& expr);
  Value eval_binary(const Expr& expr);
  Value eval_compare(const Expr& expr);
  Value eval_call(const Expr& expr);
  Value eval_filter(const Expr& expr, const Value* subject_override = nullptr);
  Value eval_test(const Expr& expr);
  CallArgs eval_args(const Expr& expr);
  Value call_macro(const MacroNode& macro, const CallArgs& args, int line);
  Value lookup(const std::string& name) const;

  Dict globals_;
  RenderLimits limits_;
  Scope root_;
  Scope* scope_ = &root_;
  // Namespaces are the only mutable values, so `{% set ns.x = ... %}` is the
  // only way to make a reference cycle (ns.x = ns, or via a list or a loop
  // object); shared_ptr would never free one. Every namespace assigned to is
  // kept here and emptied when the render ends, which breaks any cycle.
  std::vector<Value> written_namespaces_;
  std::unordered_set<const Dict*> written_namespace_ids_;
  int call_depth_ = 0;
  int64_t steps_ = 0;
  size_t output_bytes_ = 0;
};

}  // namespace strata::chat_template
