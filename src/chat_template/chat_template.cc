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

// Converts the context (which may throw on exotic JSON) and renders.
template <typename Json, typename Convert>
StatusOr<std::string> render_json(const Body& body, const Json& context, Convert convert,
                                  const RenderLimits& limits) {
  if (!context.is_object()) return invalid_argument("chat template context must be a JSON object");
  try {
    Value root = convert(context);
    Evaluator evaluator(make_default_globals(), limits);
    return evaluator.render(body, root.as_dict());
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template render failed: ") + e.what());
  }
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
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["tools"] = tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = bos_token;
  context["eos_token"] = eos_token;
  if (extra_kwargs.is_object()) {
    for (auto it = extra_kwargs.begin(); it != extra_kwargs.end(); ++it) context[it.key()] = it.value();
  }
  return tmpl.render(context, limits);
}

}  // namespace strata::chat_template
