// ChatTemplate: renders a Hugging Face `chat_template` (the Jinja2 subset
// real templates use) byte-for-byte as transformers does: jinja2's
// ImmutableSandboxedEnvironment with trim_blocks=True, lstrip_blocks=True,
// the loopcontrols extension, transformers' tojson (json.dumps with
// ensure_ascii=False), and the raise_exception and strftime_now globals.
//
// Operations
//   parse(source)      compile once, at startup: any syntax error, unknown
//                      tag, unknown filter or unknown test fails here, with
//                      line/column and what was expected.
//   render(context)    run the template with a dict of variables.
//   apply_chat_template(...)  build the context transformers builds and render.
//
// Thread-safety: a ChatTemplate is immutable after parse(); render() may be
// called concurrently from any number of threads. Copies share the AST.
//
// Limits: parse nesting depth (ast.h) and, per render, macro recursion,
// loop/call steps, range() length and output size (limits.h) are bounded, so
// a hostile template yields an error Status rather than a crash or a runaway.
//
// Key order: Python dicts keep insertion order and templates expose it (e.g.
// `tool | tojson`). A `Value` context (value.h) is rendered as it is (the
// server converts request bodies straight into Values); nlohmann contexts are
// converted once per render: pass nlohmann::ordered_json to keep the caller's
// order, nlohmann::json sorts object keys.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "chat_template/limits.h"
#include "chat_template/value.h"

namespace strata::chat_template {

struct Stmt;

class ChatTemplate {
 public:
  static StatusOr<ChatTemplate> parse(std::string_view source);

  // `context` must be a JSON object; its members become template variables.
  // Errors: kInvalidArgument (a render error, or the exact message of the
  // template's raise_exception), kResourceExhausted (a limit was hit).
  StatusOr<std::string> render(const nlohmann::ordered_json& context,
                               const RenderLimits& limits = {}) const;
  StatusOr<std::string> render(const nlohmann::json& context, const RenderLimits& limits = {}) const;
  // `context` must be a dict.
  StatusOr<std::string> render(const Value& context, const RenderLimits& limits = {}) const;

 private:
  struct Impl;
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Renders with the variables transformers' apply_chat_template passes:
// messages, tools (none when `tools` is null), documents (none),
// add_generation_prompt, bos_token, eos_token, then every member of
// `extra_kwargs` (a dict or None; e.g. {"enable_thinking": false}).
StatusOr<std::string> apply_chat_template(const ChatTemplate& tmpl, const Value& messages,
                                          bool add_generation_prompt, const Value& tools,
                                          const std::string& bos_token,
                                          const std::string& eos_token, const Value& extra_kwargs,
                                          const RenderLimits& limits = {});
// The same from nlohmann values (each converted once to a Value).
StatusOr<std::string> apply_chat_template(const ChatTemplate& tmpl,
                                          const nlohmann::ordered_json& messages,
                                          bool add_generation_prompt,
                                          const nlohmann::ordered_json& tools,
                                          const std::string& bos_token,
                                          const std::string& eos_token,
                                          const nlohmann::ordered_json& extra_kwargs,
                                          const RenderLimits& limits = {});

}  // namespace strata::chat_template
