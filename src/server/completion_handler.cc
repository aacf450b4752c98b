// POST /v1/completions: prompts (text or token ids) -> GenerationJob.
#include <algorithm>

#include "server/handlers.h"
#include "server/openai_request.h"
#include "server/request_options.h"

namespace strata::server {
namespace {

ApiOr<std::vector<JobPrompt>> tokenize_prompts(const ServerContext& ctx,
                                               const CompletionRequest& r) {
  std::vector<JobPrompt> prompts;
  for (const PromptInput& in : r.prompts) {
    JobPrompt p;
    if (in.is_text) {
      p.token_ids = ctx.tokenizer->encode(in.text, r.add_special_tokens);
      p.echo_text = in.text;
    } else {
      if (auto err = check_token_ids(ctx, in.token_ids, "prompt")) return *err;
      p.token_ids = in.token_ids;
      if (r.echo) p.echo_text = ctx.tokenizer->decode(in.token_ids, /*skip_special_tokens=*/false);
    }
    truncate_prompt(ctx, r.sampling, &p.token_ids);
    prompts.push_back(std::move(p));
  }
  return prompts;
}

}  // namespace

void reply_error(HttpResponder& responder, const ApiError& error) {
  responder.reply(error.status, "application/json", error.to_json());
}

void handle_completions(ServerContext& ctx, const HttpRequest& req,
                        std::shared_ptr<HttpResponder> responder) {
  ApiOr<CompletionRequest> r = parse_completion_request(req.body);
  if (!r.ok()) return reply_error(*responder, r.error());
  ApiOr<std::string> model = resolve_model(ctx, r->model);
  if (!model.ok()) return reply_error(*responder, model.error());
  ApiOr<std::vector<JobPrompt>> prompts = tokenize_prompts(ctx, *r);
  if (!prompts.ok()) return reply_error(*responder, prompts.error());
  ApiOr<JobOptions> options = make_job_options(ctx, r->sampling);
  if (!options.ok()) return reply_error(*responder, options.error());
  if (auto err = resolve_max_tokens(ctx, r->sampling, false, *prompts, &*options)) {
    return reply_error(*responder, *err);
  }
  if (auto err = check_capacity(ctx, prompts->size() * static_cast<size_t>(options->n))) {
    return reply_error(*responder, *err);
  }
  options->meta = {new_response_id("cmpl-"), unix_now(), *model, false};
  options->echo = r->echo;
  options->num_logprobs = r->logprobs.value_or(-1);
  options->base.num_top_logprobs = options->num_logprobs;
  if (r->echo && r->logprobs) {
    options->base.num_prompt_logprobs =
        std::max(options->base.num_prompt_logprobs, options->num_logprobs);
  }
  auto job =
      std::make_shared<GenerationJob>(ctx, std::move(*options), std::move(*prompts), responder);
  if (auto err = job->start()) reply_error(*responder, *err);
}

}  // namespace strata::server
