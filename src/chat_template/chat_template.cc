#include "chat_template/chat_template.h"

#include <exception>

#include "chat_template/ast.h"
#include "chat_template/builtins.h"
#include "chat_template/error.h"
#include "chat_template/evaluator.h"
#include "chat_template/parser.h"

namespace strata::chat_template {

struct ChatTemplate::Impl {
  Body body;
};

namespace {

Status to_status(const TemplateError& e) {
  std::string where = "chat template";
  if (e.line > 0) where += " line " + std::to_string(e.line);
  if (e.column > 0) where += ", column " + std::to_string(e.column);
  switch (e.kind) {
    case TemplateError::Kind::kSyntax: return invalid_argument(where + ": syntax error: " + e.message);
    case TemplateError::Kind::kRaised: return invalid_argument(e.message);
    case TemplateError::Kind::kLimit: return Status(StatusCode::kResourceExhausted, where + ": " + e.message);
    case TemplateError::Kind::kRender: break;
  }
  return invalid_argument(where + ": " + e.message);
}

// Unknown filters and tests are compile-time errors in jinja2; reject them at
// parse time so a bad template fails at startup, not on the first request.
void validate_expr(const Expr* e) {
  if (e == nullptr) return;
  if (e->kind == Expr::Kind::kFilter && !is_known_filter(e->name)) {
    throw TemplateError(TemplateError::Kind::kSyntax, "no filter named '" + e->name + "'", e->line);
  }
  if (e->kind == Expr::Kind::kTest && !is_known_test(e->name)) {
    throw TemplateError(TemplateError::Kind::kSyntax, "no test named '" + e->name + "'", e->line);
  }
  for (const ExprPtr& a : e->args) validate_expr(a.get());
  for (const auto& kw : e->kwargs) validate_expr(kw.second.get());
}

void validate_body(const Body& body) {
  for (const StmtPtr& s : body) {
    validate_expr(s->expr.get());
    validate_expr(s->target.get());
    validate_expr(s->condition.get());
    for (const IfBranch& b : s->branches) {
      validate_expr(b.condition.get());
      validate_body(b.body);
    }
    validate_body(s->body);
    validate_body(s->else_body);
    if (s->macro != nullptr) {
      for (const MacroParam& p : s->macro->params) validate_expr(p.default_value.get());
      validate_body(s->macro->body);
    }
  }
}

StatusOr<std::string> render_value(const Body& body, const Value& context,
                                   const RenderLimits& limits) {
  if (!context.is_dict()) return invalid_argument("chat template context must be a JSON object");
  try {
    Evaluator evaluator(make_default_globals(), limits);
    return evaluator.render(body, context.as_dict());
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template render failed: ") + e.what());
  }
}

// Converts an nlohmann value (which may throw on exotic JSON).
template <typename Json, typename Convert>
StatusOr<Value> convert_json(const Json& json, Convert convert) {
  try {
    return convert(json);
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template render failed: ") + e.what());
  }
}

template <typename Json, typename Convert>
StatusOr<std::string> render_json(const Body& body, const Json& context, Convert convert,
                                  const RenderLimits& limits) {
  if (!context.is_object()) return invalid_argument("chat template context must be a JSON object");
  STRATA_ASSIGN_OR_RETURN(Value root, convert_json(context, convert));
  return render_value(body, root, limits);
}

}  // namespace

StatusOr<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  try {
    auto impl = std::make_shared<Impl>();
    impl->body = parse_template(source);
    validate_body(impl->body);
    return ChatTemplate(std::move(impl));
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template parse failed: ") + e.what());
  }
}

StatusOr<std::string> ChatTemplate::render(const nlohmann::ordered_json& context,
                                           const RenderLimits& limits) const {
  return render_json(impl_->body, context, value_from_ordered_json, limits);
}

StatusOr<std::string> ChatTemplate::render(const nlohmann::json& context,
                                           const RenderLimits& limits) const {
  return render_json(impl_->body, context, value_from_json, limits);
}

StatusOr<std::string> ChatTemplate::render(const Value& context, const RenderLimits& limits) const {
  return render_value(impl_->body, context, limits);
}

StatusOr<std::string> apply_chat_template(const ChatTemplate& tmpl, const Value& messages,
                                          bool add_generation_prompt, const Value& tools,
                                          const std::string& bos_token,
                                          const std::string& eos_token, const Value& extra_kwargs,
                                          const RenderLimits& limits) {
  if (!extra_kwargs.is_none() && !extra_kwargs.is_dict()) {
    return invalid_argument("chat_template_kwargs must be a JSON object");
  }
  Dict context;
  context.set("messages", messages);
  context.set("tools", tools);
  context.set("documents", Value::none());
  context.set("add_generation_prompt", Value::boolean(add_generation_prompt));
  context.set("bos_token", Value::string(bos_token));
  context.set("eos_token", Value::string(eos_token));
  if (extra_kwargs.is_dict()) {
    for (const auto& [key, value] : extra_kwargs.as_dict().entries()) context.set(key, value);
  }
  return tmpl.render(Value::dict(std::move(context)), limits);
}

StatusOr<std::string> apply_chat_template(const ChatTemplate& tmpl,
                                          const nlohmann::ordered_json& messages,
                                          bool add_generation_prompt,
                                          const nlohmann::ordered_json& tools,
                                          const std::string& bos_token,
                                          const std::string& eos_token,
                                          const nlohmann::ordered_json& extra_kwargs,
                                          const RenderLimits& limits) {
  if (!extra_kwargs.is_null() && !extra_kwargs.is_object()) {
    return invalid_argument("chat_template_kwargs must be a JSON object");
  }
  STRATA_ASSIGN_OR_RETURN(Value messages_value, convert_json(messages, value_from_ordered_json));
  STRATA_ASSIGN_OR_RETURN(Value tools_value, convert_json(tools, value_from_ordered_json));
  STRATA_ASSIGN_OR_RETURN(Value kwargs_value, convert_json(extra_kwargs, value_from_ordered_json));
  return apply_chat_template(tmpl, messages_value, add_generation_prompt, tools_value, bos_token,
                             eos_token, kwargs_value, limits);
}

}  // namespace strata::chat_template
