#include "server/request_options.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "structured/builtin_grammars.h"
#include "structured/json_schema.h"
#include "structured/regex_to_gbnf.h"

namespace strata::server {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ApiOr<std::string> resolve_model(const ServerContext& ctx, const std::string& requested) {
  const auto& names = ctx.config.served_model_names;
  if (requested.empty()) return names.front();
  for (const std::string& n : names) {
    if (n == requested) return names.front();
  }
  return ApiError::not_found("The model `" + requested + "` does not exist.", "model");
}

std::string new_response_id(const std::string& prefix) {
  // 128 bits from the OS, as vLLM's uuid4().hex: unique across restarts and
  // replicas whatever --seed is (the seed governs sampling only).
  thread_local std::random_device entropy;
  char buf[33];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(buf + 8 * i, 9, "%08x", static_cast<unsigned>(entropy()));
  }
  return prefix + buf;
}

std::optional<ApiError> check_token_ids(const ServerContext& ctx, const std::vector<int32_t>& ids,
                                        const std::string& param) {
  const int64_t vocab = ctx.engine->model().vocab_size();
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab) {
      return ApiError::bad_request("token id " + std::to_string(id) + " in '" + param +
                                       "' is out of vocabulary (vocabulary size " +
                                       std::to_string(vocab) + ")",
                                   param);
    }
  }
  return std::nullopt;
}

namespace {

sampling::SamplingParams make_sampling(const ServerContext& ctx, const SamplingFields& f) {
  const SamplingDefaults& d = ctx.config.defaults;
  sampling::SamplingParams p;
  p.temperature = f.temperature.value_or(d.temperature);
  p.top_p = f.top_p.value_or(d.top_p);
  p.top_k = f.top_k.value_or(d.top_k);
  if (p.top_k < 0) p.top_k = 0;
  p.min_p = f.min_p.value_or(d.min_p);
  p.presence_penalty = f.presence_penalty.value_or(0.0);
  p.frequency_penalty = f.frequency_penalty.value_or(0.0);
  p.repetition_penalty = f.repetition_penalty.value_or(d.repetition_penalty);
  p.logit_bias = f.logit_bias;
  return p;
}

// vLLM's bad_words: each word as tokenized alone and after a space.
std::vector<std::vector<int32_t>> bad_word_sequences(const ServerContext& ctx,
                                                     const std::vector<std::string>& words) {
  std::vector<std::vector<int32_t>> out;
  for (const std::string& w : words) {
    for (const std::string& text : {w, " " + w}) {
      std::vector<int32_t> ids = ctx.tokenizer->encode(text, false);
      if (!ids.empty() && std::find(out.begin(), out.end(), ids) == out.end()) {
        out.push_back(std::move(ids));
      }
    }
  }
  return out;
}

StatusOr<std::string> constraint_gbnf(const ServerConfig& config,
                                      const StructuredOutputRequest& r) {
  using Kind = StructuredOutputRequest::Kind;
  structured::JsonSchemaOptions json_options;
  // As vLLM's xgrammar backend (strict_mode): properties a schema does not
  // list are allowed only where it says so (additionalProperties), and
  // whitespace is bounded.
  json_options.strict = true;
  json_options.any_whitespace = config.structured_any_whitespace;
  switch (r.kind) {
    case Kind::kJsonSchema:
      return structured::json_schema_to_gbnf(r.text, json_options);
    case Kind::kJsonObject:
      return structured::json_object_gbnf(json_options);
    case Kind::kRegex:
      return structured::regex_to_gbnf(r.text);
    case Kind::kChoice:
      return structured::choice_to_gbnf(r.choices);
    case Kind::kGrammar:
      return r.text;
    case Kind::kNone:
      break;
  }
  return invalid_argument("no constraint");
}

// The user-facing words for a prompt over a limit: vLLM's where it has
// them, else the flag that raises the limit.
ApiError prompt_limit_error(const engine::PromptLimitBreach& breach) {
  using Kind = engine::PromptLimitBreach::Kind;
  const std::string len = std::to_string(breach.num_tokens);
  const std::string limit = std::to_string(breach.limit);
  switch (breach.kind) {
    case Kind::kEmpty:
      return ApiError::bad_request("The prompt is empty.", "prompt");
    case Kind::kModelLen:
      return ApiError::bad_request("This model's maximum context length is " + limit +
                                       " tokens. However, your request has " + len +
                                       " input tokens. Please reduce the length of the input "
                                       "messages.",
                                   "input_tokens");
    case Kind::kKvCache:
      return ApiError::bad_request("The prompt has " + len + " tokens but the KV cache holds " +
                                       limit + " tokens; raise --kv-cache-memory.",
                                   "input_tokens");
    case Kind::kStepBudget:
      return ApiError::bad_request(
          "The prompt has " + len + " tokens but --max-num-batched-tokens is " + limit +
              " and chunked prefill is off; raise it or enable chunked prefill.",
          "input_tokens");
    case Kind::kNone:
      break;
  }
  return ApiError::internal("prompt limit check failed");
}

}  // namespace

std::optional<ApiError> add_structured_output(ServerContext& ctx,
                                              const StructuredOutputRequest& request,
                                              JobOptions* options) {
  if (request.kind == StructuredOutputRequest::Kind::kNone) return std::nullopt;
  if (ctx.grammars == nullptr) {
    return ApiError::bad_request("structured outputs need the tokenizer's vocabulary, which "
                                 "this server could not build",
                                 request.param);
  }
  StatusOr<std::string> gbnf = constraint_gbnf(ctx.config, request);
  if (!gbnf.ok()) return ApiError::bad_request(gbnf.status().message(), request.param);
  auto grammar = ctx.grammars->compile_gbnf(*gbnf);
  if (!grammar.ok()) {
    return ApiError::bad_request("invalid " + request.param + ": " + grammar.status().message(),
                                 request.param);
  }
  options->base.constraints.grammar = std::move(*grammar);
  return std::nullopt;
}

ApiOr<JobOptions> make_job_options(ServerContext& ctx, const SamplingFields& f) {
  JobOptions o;
  o.stream = f.stream;
  o.include_usage = f.include_usage;
  o.continuous_usage = f.continuous_usage_stats;
  o.n = f.n;
  o.stop = f.stop;
  o.include_stop_str = f.include_stop_str_in_output;
  o.return_token_ids = f.return_token_ids;
  o.detokenize.skip_special_tokens = f.skip_special_tokens;
  o.detokenize.spaces_between_special_tokens = f.spaces_between_special_tokens;
  if (f.seed) o.seed = static_cast<uint64_t>(*f.seed);
  o.base.sampling = make_sampling(ctx, f);
  std::vector<int32_t> bias_ids;
  for (const auto& [id, bias] : f.logit_bias) bias_ids.push_back(id);
  if (auto err = check_token_ids(ctx, bias_ids, "logit_bias")) return *err;
  if (auto err = check_token_ids(ctx, f.stop_token_ids, "stop_token_ids")) return *err;
  o.base.stop.stop_token_ids = f.stop_token_ids;
  o.base.stop.eos_token_ids = ctx.config.eos_token_ids;
  o.base.stop.ignore_eos = f.ignore_eos;
  o.base.stop.min_tokens = f.min_tokens.value_or(0);
  o.base.cache_salt = f.cache_salt;
  if (auto err = check_token_ids(ctx, f.allowed_token_ids, "allowed_token_ids")) return *err;
  o.base.constraints.allowed_token_ids = f.allowed_token_ids;
  o.base.constraints.bad_words = bad_word_sequences(ctx, f.bad_words);
  if (auto err = add_structured_output(ctx, f.structured, &o)) return *err;
  o.base.kv_transfer = f.kv_transfer;
  if (f.prompt_logprobs && *f.prompt_logprobs >= 0) {
    if (f.stream) {
      return ApiError::bad_request("Prompt_logprobs are not available when stream is enabled",
                                   "prompt_logprobs");
    }
    o.num_prompt_logprobs = static_cast<int>(*f.prompt_logprobs);
    o.base.num_prompt_logprobs = o.num_prompt_logprobs;
  }
  return o;
}

std::optional<ApiError> resolve_max_tokens(const ServerContext& ctx, const SamplingFields& f,
                                           bool is_chat, const std::vector<JobPrompt>& prompts,
                                           JobOptions* options) {
  const engine::RequestLimits& limits = ctx.engine->limits();
  const int64_t max_len = limits.max_model_len;
  for (const JobPrompt& p : prompts) {
    const int64_t len = static_cast<int64_t>(p.token_ids.size());
    // The prompt and at least one generated token must fit.
    if (engine::PromptLimitBreach breach =
            engine::check_prompt_length(limits, len, /*num_new_tokens=*/1)) {
      return prompt_limit_error(breach);
    }
    const int64_t room = max_len - len;
    int64_t max_tokens = 0;
    if (f.max_tokens) {
      if (*f.max_tokens > room) {
        return ApiError::bad_request(
            "'max_tokens' or 'max_completion_tokens' is too large: " +
                std::to_string(*f.max_tokens) + ". This model's maximum context length is " +
                std::to_string(max_len) + " tokens and your request has " + std::to_string(len) +
                " input tokens (" + std::to_string(*f.max_tokens) + " > " +
                std::to_string(max_len) + " - " + std::to_string(len) + ").",
            "max_tokens");
      }
      max_tokens = *f.max_tokens;
    } else if (is_chat) {
      max_tokens = std::min(room, ctx.config.defaults.max_new_tokens.value_or(room));
    } else {
      max_tokens = std::min<int64_t>(16, room);
    }
    options->max_tokens.push_back(max_tokens);
  }
  return std::nullopt;
}

void truncate_prompt(const ServerContext& ctx, const SamplingFields& fields,
                     std::vector<int32_t>* ids) {
  if (!fields.truncate_prompt_tokens || *fields.truncate_prompt_tokens == 0) return;
  int64_t keep = *fields.truncate_prompt_tokens;
  if (keep < 0) keep = ctx.config.max_model_len;
  if (static_cast<int64_t>(ids->size()) > keep) ids->erase(ids->begin(), ids->end() - keep);
}

std::optional<ApiError> check_capacity(const ServerContext& ctx, size_t num_requests) {
  if (!ctx.engine->is_healthy())
    return ApiError::internal("The engine is dead; see the server log.");
  const int64_t limit = ctx.config.max_pending_requests;
  if (limit > 0 && ctx.num_in_flight + static_cast<int64_t>(num_requests) > limit) {
    return ApiError::unavailable("The server is overloaded: " + std::to_string(ctx.num_in_flight) +
                                 " requests in flight (--max-pending-requests " +
                                 std::to_string(limit) + "). Retry later.");
  }
  return std::nullopt;
}

}  // namespace strata::server
