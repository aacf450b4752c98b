// POST /v1/chat/completions (template -> tokens -> GenerationJob), and the
// tokenizer endpoints POST /tokenize and POST /detokenize.
#include <algorithm>

#include "server/handlers.h"
#include "server/json_writer.h"
#include "server/openai_request.h"
#include "server/request_options.h"
#include "server/tool_choice.h"

namespace strata::server {
namespace {

using chat_template::Value;

struct ChatPromptSpec {
  const chat_template::ChatTemplate* chat_template;  // null: the server's
  const ChatTemplateInputs* inputs;
  bool add_generation_prompt;
  bool continue_final_message;
};

// A field of the conversation's last message (null when there are no
// messages or it lacks the field).
const Value* last_message_field(const ChatTemplateInputs& in, std::string_view name) {
  const auto& messages = in.messages.as_list();
  return messages.empty() ? nullptr : messages.back().as_dict().find(name);
}

// Renders the conversation; continue_final_message cuts the text right after
// the last message's content so the model continues it.
ApiOr<std::string> render_chat(const ServerContext& ctx, const ChatPromptSpec& spec) {
  const chat_template::ChatTemplate* tmpl =
      spec.chat_template != nullptr ? spec.chat_template
                                    : (ctx.chat_template ? &*ctx.chat_template : nullptr);
  if (tmpl == nullptr) {
    return ApiError::bad_request(
        "As of transformers v4.44, default chat template is no longer allowed, so you must "
        "provide a chat template if the tokenizer does not define one.");
  }
  const ChatTemplateInputs& in = *spec.inputs;
  StatusOr<std::string> text =
      chat_template::apply_chat_template(*tmpl, in.messages, spec.add_generation_prompt, in.tools,
                                         ctx.bos_token, ctx.eos_token, in.kwargs);
  if (!text.ok()) return ApiError::bad_request("chat template error: " + text.status().message());
  if (spec.continue_final_message) {
    const Value* content = last_message_field(in, "content");
    if (content != nullptr && content->is_string()) {
      const std::string& last = content->as_string();
      size_t pos = text->rfind(last);
      if (!last.empty() && pos != std::string::npos) text->resize(pos + last.size());
    }
  }
  return std::move(*text);
}

void reply_json(HttpResponder& responder, std::string body) {
  responder.reply(200, "application/json", std::move(body));
}

// A request-level chat_template (vLLM: only with --trust-request-chat-template).
ApiOr<std::optional<chat_template::ChatTemplate>> request_template(const ServerContext& ctx,
                                                                   const ChatRequest& r) {
  if (!r.chat_template) return std::optional<chat_template::ChatTemplate>();
  if (!ctx.config.trust_request_chat_template) {
    return ApiError::bad_request(
        "Chat template is passed with request, but --trust-request-chat-template is not set. "
        "Refused request with untrusted chat template.",
        "chat_template");
  }
  StatusOr<chat_template::ChatTemplate> t = chat_template::ChatTemplate::parse(*r.chat_template);
  if (!t.ok()) {
    return ApiError::bad_request("chat template error: " + t.status().message(), "chat_template");
  }
  return std::optional<chat_template::ChatTemplate>(std::move(*t));
}

// Which reasoning marker comes last in the prompt: a start (the prompt ends
// inside a reasoning section), an end (reasoning is closed), or none.
enum class LastReasoningMarker { kNone, kStart, kEnd };

LastReasoningMarker last_reasoning_marker(const output_parsers::ReasoningParser& parser,
                                          const std::string& prompt) {
  const size_t open = prompt.rfind(parser.start_marker());
  const size_t close = prompt.rfind(parser.end_marker());
  if (open == std::string::npos && close == std::string::npos) return LastReasoningMarker::kNone;
  if (close == std::string::npos || (open != std::string::npos && open > close)) {
    return LastReasoningMarker::kStart;
  }
  return LastReasoningMarker::kEnd;
}

// tool_choice -> how the output is constrained and parsed (vLLM's rules:
// absent = "auto" with tools, "none" without; "auto" needs
// --enable-auto-tool-choice and a --tool-call-parser; required and named go
// through the constrained decoder).
std::optional<ApiError> plan_tool_calls(const ServerContext& ctx, const ChatRequest& r,
                                        StructuredOutputRequest* constraint,
                                        ChatOutputOptions* out) {
  const bool has_tools = !r.tools.is_null();
  ToolChoice::Mode mode = r.tool_choice.mode;
  if (!r.tool_choice.given) mode = has_tools ? ToolChoice::Mode::kAuto : ToolChoice::Mode::kNone;
  if (mode == ToolChoice::Mode::kNone) return std::nullopt;
  if (!has_tools) {
    return ApiError::bad_request("When using `tool_choice`, `tools` must be set.", "tool_choice");
  }
  if (mode == ToolChoice::Mode::kAuto) {
    if (!ctx.config.enable_auto_tool_choice || ctx.tool_parser == nullptr) {
      // Also when tool_choice is absent (tools imply "auto"): silently
      // returning tool calls as text would break agents.
      return ApiError::bad_request(
          "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be "
          "set",
          "tool_choice");
    }
    // The server's parser lives as long as the server: a non-owning pointer.
    out->tool_parser = std::shared_ptr<const output_parsers::ToolCallParser>(
        std::shared_ptr<const output_parsers::ToolCallParser>(), ctx.tool_parser.get());
    return std::nullopt;
  }
  if (r.sampling.structured.kind != StructuredOutputRequest::Kind::kNone) {
    return ApiError::bad_request("tool_choice 'required' or a named tool cannot be combined with "
                                 "another structured outputs constraint ('" +
                                     r.sampling.structured.param + "')",
                                 "tool_choice");
  }
  ApiOr<std::string> schema = mode == ToolChoice::Mode::kRequired
                                  ? required_tools_schema(r.tools, r.parallel_tool_calls)
                                  : named_tool_schema(r.tools, r.tool_choice.name);
  if (!schema.ok()) return schema.error();
  *constraint = {StructuredOutputRequest::Kind::kJsonSchema, std::move(*schema), {}, false,
                 "tool_choice"};
  if (mode == ToolChoice::Mode::kRequired) {
    out->tool_parser = make_required_tool_calls_parser();
  } else {
    out->tool_parser = make_named_tool_call_parser(r.tool_choice.name);
    out->tool_calls_finish_reason = "";  // vLLM: a named tool choice finishes with "stop"
  }
  out->null_content_with_calls = false;
  return std::nullopt;
}

// vLLM's chat echo: the reply starts with the last message's content when
// that message has the reply's role ("assistant" with a generation prompt,
// else the last message's own).
std::string echo_text(const ChatRequest& r) {
  const Value* role = last_message_field(r.template_inputs, "role");
  if (!r.echo || role == nullptr) return "";
  if (r.add_generation_prompt && role->as_string() != "assistant") return "";
  const Value* content = last_message_field(r.template_inputs, "content");
  return content != nullptr && content->is_string() ? content->as_string() : "";
}

}  // namespace

void handle_chat_completions(ServerContext& ctx, const HttpRequest& req,
                             std::shared_ptr<HttpResponder> responder) {
  ApiOr<ChatRequest> r = parse_chat_request(req.body);
  if (!r.ok()) return reply_error(*responder, r.error());
  ApiOr<std::string> model = resolve_model(ctx, r->model);
  if (!model.ok()) return reply_error(*responder, model.error());
  ApiOr<std::optional<chat_template::ChatTemplate>> tmpl = request_template(ctx, *r);
  if (!tmpl.ok()) return reply_error(*responder, tmpl.error());
  ApiOr<std::string> text = render_chat(ctx, {*tmpl ? &**tmpl : nullptr, &r->template_inputs,
                                              r->add_generation_prompt, r->continue_final_message});
  if (!text.ok()) return reply_error(*responder, text.error());
  StructuredOutputRequest tool_constraint;
  ChatOutputOptions chat_output;
  if (auto err = plan_tool_calls(ctx, *r, &tool_constraint, &chat_output)) {
    return reply_error(*responder, *err);
  }
  std::vector<JobPrompt> prompts(1);
  prompts[0].token_ids = ctx.tokenizer->encode(*text, r->add_special_tokens);
  prompts[0].echo_text = echo_text(*r);
  truncate_prompt(ctx, r->sampling, &prompts[0].token_ids);
  ApiOr<JobOptions> options = make_job_options(ctx, r->sampling);
  if (!options.ok()) return reply_error(*responder, options.error());
  if (auto err = add_structured_output(ctx, tool_constraint, &*options)) {
    return reply_error(*responder, *err);
  }
  if (ctx.reasoning_parser != nullptr) {
    const LastReasoningMarker last = last_reasoning_marker(*ctx.reasoning_parser, *text);
    chat_output.reasoning = ctx.reasoning_parser.get();
    chat_output.prompt_opened_think = last == LastReasoningMarker::kStart;
    // Structured outputs start after the reasoning section (unless
    // --structured-outputs-config enable_in_reasoning).
    if (options->base.constraints.grammar != nullptr && !ctx.config.structured_in_reasoning &&
        last != LastReasoningMarker::kEnd) {
      options->base.constraints.grammar_starts_after = ctx.reasoning_end_ids;
    }
  }
  if (chat_output.tool_parser != nullptr && !r->tools.is_null()) {
    chat_output.tools = std::make_shared<const nlohmann::ordered_json>(r->tools);
  }
  options->chat_output = std::move(chat_output);
  options->echo = !prompts[0].echo_text.empty();
  if (auto err = resolve_max_tokens(ctx, r->sampling, true, prompts, &*options)) {
    return reply_error(*responder, *err);
  }
  if (auto err = check_capacity(ctx, static_cast<size_t>(options->n))) {
    return reply_error(*responder, *err);
  }
  options->meta = {new_response_id("chatcmpl-"), unix_now(), *model, true};
  options->num_logprobs = r->logprobs ? r->top_logprobs : -1;
  options->base.num_top_logprobs = options->num_logprobs;
  auto job =
      std::make_shared<GenerationJob>(ctx, std::move(*options), std::move(prompts), responder);
  if (auto err = job->start()) reply_error(*responder, *err);
}

void handle_tokenize(ServerContext& ctx, const HttpRequest& req,
                     std::shared_ptr<HttpResponder> responder) {
  ApiOr<TokenizeRequest> r = parse_tokenize_request(req.body);
  if (!r.ok()) return reply_error(*responder, r.error());
  ApiOr<std::string> model = resolve_model(ctx, r->model);
  if (!model.ok()) return reply_error(*responder, model.error());
  std::string text = r->prompt;
  if (r->is_chat) {
    ApiOr<std::string> rendered =
        render_chat(ctx, {nullptr, &r->template_inputs, r->add_generation_prompt, false});
    if (!rendered.ok()) return reply_error(*responder, rendered.error());
    text = std::move(*rendered);
  }
  std::vector<int32_t> ids = ctx.tokenizer->encode(text, r->add_special_tokens);
  JsonWriter w;
  w.begin_object().key("count").value(static_cast<int64_t>(ids.size()));
  w.key("max_model_len").value(ctx.config.max_model_len);
  w.key("tokens").begin_array();
  for (int32_t id : ids) w.value(static_cast<int64_t>(id));
  w.end_array().key("token_strs");
  if (r->return_token_strs) {
    w.begin_array();
    for (int32_t id : ids) w.value(ctx.tokenizer->id_to_token(id));
    w.end_array();
  } else {
    w.null();
  }
  w.end_object();
  reply_json(*responder, w.take());
}

void handle_detokenize(ServerContext& ctx, const HttpRequest& req,
                       std::shared_ptr<HttpResponder> responder) {
  ApiOr<DetokenizeRequest> r = parse_detokenize_request(req.body);
  if (!r.ok()) return reply_error(*responder, r.error());
  ApiOr<std::string> model = resolve_model(ctx, r->model);
  if (!model.ok()) return reply_error(*responder, model.error());
  if (auto err = check_token_ids(ctx, r->tokens, "tokens")) return reply_error(*responder, *err);
  JsonWriter w;
  w.begin_object().key("prompt").value(ctx.tokenizer->decode(r->tokens, false));
  w.end_object();
  reply_json(*responder, w.take());
}

}  // namespace strata::server
