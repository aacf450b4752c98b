// POST /v1/chat/completions (template -> tokens -> GenerationJob), and the
// tokenizer endpoints POST /tokenize and POST /detokenize.
#include <algorithm>

#include "server/handlers.h"
#include "server/json_writer.h"
#include "server/openai_request.h"
#include "server/request_options.h"

namespace strata::server {
namespace {

struct ChatPromptSpec {
  const nlohmann::ordered_json* messages;
  const nlohmann::ordered_json* tools;
  const nlohmann::ordered_json* kwargs;
  bool add_generation_prompt;
  bool continue_final_message;
};

// Renders the conversation; continue_final_message cuts the text right after
// the last message's content so the model continues it.
ApiOr<std::string> render_chat(const ServerContext& ctx, const ChatPromptSpec& spec) {
  if (!ctx.chat_template) {
    return ApiError::bad_request(
        "As of transformers v4.44, default chat template is no longer allowed, so you must "
        "provide a chat template if the tokenizer does not define one.");
  }
  StatusOr<std::string> text = chat_template::apply_chat_template(
      *ctx.chat_template, *spec.messages, spec.add_generation_prompt, *spec.tools, ctx.bos_token,
      ctx.eos_token, *spec.kwargs);
  if (!text.ok()) return ApiError::bad_request("chat template error: " + text.status().message());
  if (spec.continue_final_message && !spec.messages->empty()) {
    const auto& last = spec.messages->back();
    if (last.contains("content") && last["content"].is_string()) {
      const std::string content = last["content"].get<std::string>();
      size_t pos = text->rfind(content);
      if (!content.empty() && pos != std::string::npos) text->resize(pos + content.size());
    }
  }
  return std::move(*text);
}

void reply_json(HttpResponder& responder, std::string body) {
  responder.reply(200, "application/json", std::move(body));
}

}  // namespace

void handle_chat_completions(ServerContext& ctx, const HttpRequest& req,
                             std::shared_ptr<HttpResponder> responder) {
  ApiOr<ChatRequest> r = parse_chat_request(req.body);
  if (!r.ok()) return reply_error(*responder, r.error());
  ApiOr<std::string> model = resolve_model(ctx, r->model);
  if (!model.ok()) return reply_error(*responder, model.error());
  ApiOr<std::string> text = render_chat(ctx, {&r->messages, &r->tools, &r->chat_template_kwargs,
                                              r->add_generation_prompt, r->continue_final_message});
  if (!text.ok()) return reply_error(*responder, text.error());
  std::vector<JobPrompt> prompts(1);
  prompts[0].token_ids = ctx.tokenizer->encode(*text, r->add_special_tokens);
  truncate_prompt(ctx, r->sampling, &prompts[0].token_ids);
  ApiOr<JobOptions> options = make_job_options(ctx, r->sampling);
  if (!options.ok()) return reply_error(*responder, options.error());
  if (auto err = resolve_max_tokens(ctx, r->sampling, true, prompts, &*options)) {
    return reply_error(*responder, *err);
  }
  if (auto err = check_capacity(ctx, static_cast<size_t>(options->n))) {
    return reply_error(*responder, *err);
  }
  options->meta = {new_response_id("chatcmpl-"), unix_now(), *model, true};
  options->num_logprobs = r->logprobs ? r->top_logprobs : -1;
  options->base.num_top_logprobs = std::max(0, options->num_logprobs);
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
    ApiOr<std::string> rendered = render_chat(
        ctx, {&r->messages, &r->tools, &r->chat_template_kwargs, r->add_generation_prompt, false});
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
