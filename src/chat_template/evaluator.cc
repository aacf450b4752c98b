#include "chat_template/evaluator.h"

#include "chat_template/builtins.h"
#include "chat_template/error.h"

namespace strata::chat_template {

const Value* CallArgs::get(size_t index, const char* name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Evaluator::Evaluator(Dict globals, const RenderLimits& limits)
    : globals_(std::move(globals)), limits_(limits) {}

Evaluator::~Evaluator() {
  for (const Value& ns : written_namespaces_) ns.namespace_dict().clear();
}

std::string Evaluator::render(const Body& body, const Dict& variables) {
  for (const auto& [name, value] : variables.entries()) root_.vars[name] = value;
  std::string out;
  exec_body(body, out);
  return out;
}

void Evaluator::count_step(int line) {
  if (++steps_ > limits_.max_steps) {
    throw TemplateError(TemplateError::Kind::kLimit,
                        "template exceeded " + std::to_string(limits_.max_steps) +
                            " loop iterations and calls; it is too expensive to render",
                        line);
  }
}

void Evaluator::append(std::string& out, const std::string& text, int line) {
  output_bytes_ += text.size();
  if (output_bytes_ > limits_.max_output_bytes) {
    throw TemplateError(TemplateError::Kind::kLimit,
                        "rendered output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes",
                        line);
  }
  out += text;
}

// ---- statements --------------------------------------------------------------

Evaluator::Flow Evaluator::exec_body(const Body& body, std::string& out) {
  for (const StmtPtr& stmt : body) {
    Flow flow = exec(*stmt, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec(const Stmt& stmt, std::string& out) {
  Flow flow = Flow::kNormal;
  switch (stmt.kind) {
    case Stmt::Kind::kText: append(out, stmt.text, stmt.line); break;
    case Stmt::Kind::kOutput: append(out, eval(*stmt.expr).to_str(), stmt.line); break;
    case Stmt::Kind::kIf: exec_if(stmt, out, &flow); break;
    case Stmt::Kind::kFor: exec_for(stmt, out); break;
    case Stmt::Kind::kSet: exec_set(stmt); break;
    case Stmt::Kind::kSetBlock: {
      std::string captured;
      exec_body(stmt.body, captured);
      scope_->vars[stmt.targets[0]] = Value::string(std::move(captured));
      break;
    }
    case Stmt::Kind::kMacro:
      scope_->vars[stmt.macro->name] = Value::macro(stmt.macro.get());
      break;
    case Stmt::Kind::kFilterBlock: exec_filter_block(stmt, out); break;
    case Stmt::Kind::kBreak: return Flow::kBreak;
    case Stmt::Kind::kContinue: return Flow::kContinue;
    case Stmt::Kind::kScope: flow = exec_body(stmt.body, out); break;
  }
  return flow;
}

void Evaluator::exec_if(const Stmt& stmt, std::string& out, Flow* flow) {
  for (const IfBranch& branch : stmt.branches) {
    if (branch.condition == nullptr || eval(*branch.condition).truthy()) {
      *flow = exec_body(branch.body, out);
      return;
    }
  }
}

namespace {

// jinja2's loop object is one mutable LoopContext that advances; we mirror
// that with one namespace-like dict per for statement, updated in place.
enum LoopField { kIndex0, kIndex, kRevindex, kRevindex0, kFirst, kLast, kLength, kPrev, kNext, kCycle };

Value make_loop() {
  Dict loop;
  for (const char* name : {"index0", "index", "revindex", "revindex0", "first", "last", "length",
                           "previtem", "nextitem", "cycle", "depth", "depth0"}) {
    loop.set(name, Value());
  }
  loop.value_at(10) = Value::integer(1);
  loop.value_at(11) = Value::integer(0);
  return Value::dict(std::move(loop));
}

void advance_loop(Dict& loop, size_t index, const ValueList& items) {
  int64_t i = static_cast<int64_t>(index), n = static_cast<int64_t>(items.size());
  loop.value_at(kIndex0) = Value::integer(i);
  loop.value_at(kIndex) = Value::integer(i + 1);
  loop.value_at(kRevindex) = Value::integer(n - i);
  loop.value_at(kRevindex0) = Value::integer(n - i - 1);
  loop.value_at(kFirst) = Value::boolean(i == 0);
  loop.value_at(kLast) = Value::boolean(i + 1 == n);
  loop.value_at(kLength) = Value::integer(n);
  loop.value_at(kPrev) = i > 0 ? items[index - 1] : Value::undefined("'previtem' is undefined");
  loop.value_at(kNext) = i + 1 < n ? items[index + 1] : Value::undefined("'nextitem' is undefined");
  Value index_value = Value::integer(i);
  loop.value_at(kCycle) = Value::function("loop.cycle", &index_value);
}

}  // namespace

void Evaluator::exec_for(const Stmt& stmt, std::string& out) {
  ValueList all = iterate(eval(*stmt.expr), stmt.line);
  Scope loop_scope{{}, scope_};
  Scope* saved = scope_;
  ValueList items;
  if (stmt.condition != nullptr) {  // the filter runs before loop.length is known
    scope_ = &loop_scope;
    for (Value& item : all) {
      count_step(stmt.line);
      loop_scope.vars.clear();
      assign_loop_targets(stmt, item);
      if (eval(*stmt.condition).truthy()) items.push_back(std::move(item));
    }
    scope_ = saved;
  } else {
    items = std::move(all);
  }
  Value loop = make_loop();
  for (size_t i = 0; i < items.size(); ++i) {
    count_step(stmt.line);
    Scope iteration{{}, saved};
    scope_ = &iteration;
    advance_loop(loop.namespace_dict(), i, items);
    iteration.vars["loop"] = loop;
    assign_loop_targets(stmt, items[i]);
    Flow flow = exec_body(stmt.body, out);
    scope_ = saved;
    if (flow == Flow::kBreak) break;
  }
  if (items.empty() && !stmt.else_body.empty()) exec_body(stmt.else_body, out);
}

void Evaluator::assign_loop_targets(const Stmt& stmt, const Value& item) {
  if (stmt.targets.size() == 1) {
    scope_->vars[stmt.targets[0]] = item;
    return;
  }
  ValueList parts = iterate(item, stmt.line);
  if (parts.size() != stmt.targets.size()) {
    throw_render_error("cannot unpack " + std::to_string(parts.size()) + " values into " +
                           std::to_string(stmt.targets.size()) + " loop variables",
                       stmt.line);
  }
  for (size_t i = 0; i < parts.size(); ++i) scope_->vars[stmt.targets[i]] = parts[i];
}

void Evaluator::exec_set(const Stmt& stmt) { assign(*stmt.target, eval(*stmt.expr), stmt.line); }

void Evaluator::assign(const Expr& target, const Value& value, int line) {
  if (target.kind == Expr::Kind::kName) {
    scope_->vars[target.name] = value;
    return;
  }
  if (target.kind == Expr::Kind::kGetAttr) {
    Value base = lookup(target.args[0]->name);
    if (!base.is_namespace()) {
      throw_render_error("cannot assign attribute '" + target.name + "' on '" +
                             target.args[0]->name + "': it is not a namespace()",
                         line);
    }
    if (written_namespace_ids_.insert(&base.namespace_dict()).second) {
      written_namespaces_.push_back(base);
    }
    base.namespace_dict().set(target.name, value);
    return;
  }
  ValueList parts = iterate(value, line);
  if (parts.size() != target.args.size()) {
    throw_render_error("cannot unpack " + std::to_string(parts.size()) + " values into " +
                           std::to_string(target.args.size()) + " names",
                       line);
  }
  for (size_t i = 0; i < parts.size(); ++i) assign(*target.args[i], parts[i], line);
}

void Evaluator::exec_filter_block(const Stmt& stmt, std::string& out) {
  std::string captured;
  exec_body(stmt.body, captured);
  Value subject = Value::string(std::move(captured));
  append(out, eval_filter(*stmt.expr, &subject).to_str(), stmt.line);
}

// ---- expressions ---------------------------------------------------------------

Value Evaluator::lookup(const std::string& name) const {
  for (const Scope* s = scope_; s != nullptr; s = s->parent) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  if (const Value* v = globals_.find(name)) return *v;
  return Value::undefined("'" + name + "' is undefined");
}

Value Evaluator::eval(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.literal;
    case Expr::Kind::kName: return lookup(e.name);
    case Expr::Kind::kList: return eval_list(e);
    case Expr::Kind::kDict: return eval_dict(e);
    case Expr::Kind::kGetAttr: return get_attr(eval(*e.args[0]), e.name, e.line);
    case Expr::Kind::kGetItem: return get_item(eval(*e.args[0]), eval(*e.args[1]), e.line);
    case Expr::Kind::kSlice: {
      Value target = eval(*e.args[0]);
      Value parts[3];
      const Value* ptrs[3] = {nullptr, nullptr, nullptr};
      for (int i = 0; i < 3; ++i) {
        if (e.args[i + 1] != nullptr) {
          parts[i] = eval(*e.args[i + 1]);
          ptrs[i] = &parts[i];
        }
      }
      return slice(target, ptrs[0], ptrs[1], ptrs[2], e.line);
    }
    case Expr::Kind::kCall: return eval_call(e);
    case Expr::Kind::kFilter: return eval_filter(e);
    case Expr::Kind::kTest: return eval_test(e);
    case Expr::Kind::kUnary: {
      Value v = eval(*e.args[0]);
      if (e.name == "not") return Value::boolean(!v.truthy());
      return binary_op(e.name == "-" ? "neg" : "pos", v, v, e.line);
    }
    case Expr::Kind::kBinary: return eval_binary(e);
    case Expr::Kind::kCompare: return eval_compare(e);
    case Expr::Kind::kCondExpr: {
      if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
      if (e.args[2] == nullptr) return Value::undefined("the inline if expression had no else");
      return eval(*e.args[2]);
    }
  }
  return Value();
}

Value Evaluator::eval_list(const Expr& e) {
  ValueList items;
  items.reserve(e.args.size());
  for (const ExprPtr& item : e.args) items.push_back(eval(*item));
  return e.name == "tuple" ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Value Evaluator::eval_dict(const Expr& e) {
  Dict d;
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    Value key = eval(*e.args[i]);
    if (!key.is_string()) {
      throw_render_error("dict keys must be strings in chat templates; got " + key.type_name(),
                         e.line);
    }
    d.set(key.as_string(), eval(*e.args[i + 1]));
  }
  return Value::dict(std::move(d));
}

Value Evaluator::eval_binary(const Expr& e) {
  Value lhs = eval(*e.args[0]);
  if (e.name == "and") return lhs.truthy() ? eval(*e.args[1]) : lhs;
  if (e.name == "or") return lhs.truthy() ? lhs : eval(*e.args[1]);
  return binary_op(e.name, lhs, eval(*e.args[1]), e.line, limits_.max_output_bytes);
}

Value Evaluator::eval_compare(const Expr& e) {
  Value lhs = eval(*e.args[0]);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value rhs = eval(*e.args[i + 1]);
    if (!compare_op(e.ops[i], lhs, rhs, e.line)) return Value::boolean(false);
    lhs = std::move(rhs);
  }
  return Value::boolean(true);
}

CallArgs Evaluator::eval_args(const Expr& e) {
  CallArgs args;
  for (size_t i = 1; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i]));
  for (const auto& [name, value] : e.kwargs) args.keyword.emplace_back(name, eval(*value));
  return args;
}

Value Evaluator::eval_call(const Expr& e) {
  Value callee = eval(*e.args[0]);
  return call(callee, eval_args(e), e.line);
}

Value Evaluator::eval_filter(const Expr& e, const Value* subject_override) {
  Value subject = subject_override != nullptr ? *subject_override : eval(*e.args[0]);
  if (e.args[0] != nullptr && e.args[0]->kind == Expr::Kind::kFilter && subject_override) {
    subject = eval_filter(*e.args[0], subject_override);  // filter block chains
  }
  return apply_filter(*this, e.name, subject, eval_args(e), e.line);
}

Value Evaluator::eval_test(const Expr& e) {
  Value subject = eval(*e.args[0]);
  bool result = apply_test(*this, e.name, subject, eval_args(e), e.line);
  return Value::boolean(e.negated ? !result : result);
}

Value Evaluator::call(const Value& callee, const CallArgs& args, int line) {
  count_step(line);
  if (callee.is_macro()) return call_macro(*callee.as_macro(), args, line);
  if (callee.is_function()) return call_function(*this, callee.as_function(), args, line);
  require_defined(callee, line);
  throw_render_error("'" + callee.type_name() + "' object is not callable", line);
}

Value Evaluator::call_macro(const MacroNode& macro, const CallArgs& args, int line) {
  if (args.positional.size() > macro.params.size()) {
    throw_render_error("macro '" + macro.name + "' takes not more than " +
                           std::to_string(macro.params.size()) + " argument(s)",
                       line);
  }
  if (call_depth_ >= limits_.max_call_depth) {
    throw TemplateError(TemplateError::Kind::kLimit,
                        "macro calls nested deeper than " + std::to_string(limits_.max_call_depth) +
                            " levels (runaway recursion in '" + macro.name + "'?)",
                        line);
  }
  Scope frame{{}, &root_};
  Scope* saved = scope_;
  scope_ = &frame;
  for (size_t i = 0; i < macro.params.size(); ++i) {
    const MacroParam& p = macro.params[i];
    const Value* given = args.get(i, p.name.c_str());
    if (given != nullptr) {
      frame.vars[p.name] = *given;
    } else if (p.default_value != nullptr) {
      frame.vars[p.name] = eval(*p.default_value);
    } else {
      frame.vars[p.name] = Value::undefined("'" + p.name + "' is undefined");
    }
  }
  ++call_depth_;
  std::string out;
  struct Restore {
    Evaluator* ev;
    Scope* saved;
    ~Restore() {
      ev->scope_ = saved;
      --ev->call_depth_;
    }
  } restore{this, saved};
  exec_body(macro.body, out);
  return Value::string(std::move(out));
}

}  // namespace strata::chat_template
