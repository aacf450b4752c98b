#include "server/agent_setup.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/log.h"

namespace strata::server {
namespace {

Status apply_structured_outputs_config(const std::string& text, std::string* reasoning_parser,
                                       ServerConfig* config) {
  if (text.empty()) return Status();
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return invalid_argument("--structured-outputs-config must be a JSON object, got '" + text +
                            "'");
  }
  for (const auto& [key, value] : j.items()) {
    if (key == "backend") {
      // vLLM's backends; Strata has one engine of its own that serves them all.
      static const char* const kBackends[] = {"auto", "xgrammar", "guidance", "outlines",
                                              "lm-format-enforcer"};
      bool known = false;
      for (const char* b : kBackends) known |= value.is_string() && value == b;
      if (!known) {
        return invalid_argument("--structured-outputs-config: unknown backend " + value.dump());
      }
    } else if (key == "disable_any_whitespace" && value.is_boolean()) {
      config->structured_any_whitespace = !value.get<bool>();
    } else if (key == "disable_additional_properties" && value.is_boolean()) {
      // Already the rule: unlisted properties only where additionalProperties says so.
    } else if (key == "enable_in_reasoning" && value.is_boolean()) {
      config->structured_in_reasoning = value.get<bool>();
    } else if (key == "disable_fallback" && value.is_boolean()) {
      // One backend, nothing to fall back to.
    } else if (key == "reasoning_parser" && value.is_string()) {
      if (reasoning_parser->empty()) *reasoning_parser = value.get<std::string>();
    } else {
      return invalid_argument("--structured-outputs-config: unknown or mistyped key '" + key +
                              "' (known: backend, disable_fallback, disable_any_whitespace, "
                              "disable_additional_properties, reasoning_parser, "
                              "enable_in_reasoning)");
    }
  }
  return Status();
}

}  // namespace

std::shared_ptr<const structured::TokenVocabulary> grammar_vocabulary(
    const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& stop_token_ids,
    int64_t model_vocab_size) {
  // Ids past the model's logits can never be sampled.
  const int64_t n = std::min(tokenizer.vocab_size(), model_vocab_size);
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<int32_t> special;
  for (int32_t id = 0; id < n; ++id) {
    bytes[static_cast<size_t>(id)] = tokenizer.token_bytes(id);
    if (tokenizer.is_special(id)) special.push_back(id);
  }
  std::vector<int32_t> stops;  // generation_config may name ids past the tokenizer's
  for (int32_t id : stop_token_ids) {
    if (id >= 0 && id < n) stops.push_back(id);
  }
  return structured::make_token_vocabulary(std::move(bytes), std::move(stops), std::move(special));
}

Status check_agent_flags(const AgentFlags& flags) {
  ServerConfig config;
  std::string reasoning = flags.reasoning_parser;
  STRATA_RETURN_IF_ERROR(
      apply_structured_outputs_config(flags.structured_outputs_config, &reasoning, &config));
  if (flags.enable_auto_tool_choice && flags.tool_call_parser.empty()) {
    return invalid_argument("--enable-auto-tool-choice requires --tool-call-parser");
  }
  if (!flags.tool_call_parser.empty()) {
    STRATA_RETURN_IF_ERROR(output_parsers::make_tool_call_parser(flags.tool_call_parser).status());
  }
  if (!reasoning.empty()) {
    STRATA_RETURN_IF_ERROR(output_parsers::make_reasoning_parser(reasoning).status());
  }
  return Status();
}

Status configure_agents(const AgentFlags& flags, const tokenizer::Tokenizer& tokenizer,
                        const std::vector<int32_t>& stop_token_ids, ServerContext* ctx) {
  STRATA_RETURN_IF_ERROR(check_agent_flags(flags));
  std::string reasoning = flags.reasoning_parser;
  STRATA_RETURN_IF_ERROR(
      apply_structured_outputs_config(flags.structured_outputs_config, &reasoning, &ctx->config));
  if (!flags.tool_call_parser.empty()) {
    STRATA_ASSIGN_OR_RETURN(ctx->tool_parser,
                            output_parsers::make_tool_call_parser(flags.tool_call_parser));
    if (!flags.enable_auto_tool_choice) {
      STRATA_LOG(kWarning) << "--tool-call-parser " << flags.tool_call_parser
                           << " without --enable-auto-tool-choice: tool_choice \"auto\" is "
                              "refused, \"required\" and named tools still work";
    }
  }
  ctx->config.enable_auto_tool_choice = flags.enable_auto_tool_choice;
  ctx->config.trust_request_chat_template = flags.trust_request_chat_template;
  if (!reasoning.empty()) {
    STRATA_ASSIGN_OR_RETURN(ctx->reasoning_parser, output_parsers::make_reasoning_parser(reasoning));
    ctx->reasoning_end_ids =
        tokenizer.encode(std::string(ctx->reasoning_parser->end_marker()), false);
    if (ctx->reasoning_end_ids.empty()) {
      return invalid_argument("--reasoning-parser " + reasoning + ": the tokenizer cannot encode " +
                              std::string(ctx->reasoning_parser->end_marker()));
    }
    if (ctx->reasoning_end_ids.size() > 1) {
      STRATA_LOG(kWarning) << "--reasoning-parser " << reasoning << ": "
                           << ctx->reasoning_parser->end_marker() << " is not one token of this "
                           << "tokenizer (" << ctx->reasoning_end_ids.size()
                           << " tokens); structured outputs start after that exact token sequence, "
                              "which a model not trained for it may never produce";
    }
  }
  ctx->grammars = std::make_shared<structured::GrammarCompiler>(
      grammar_vocabulary(tokenizer, stop_token_ids, ctx->engine->model().vocab_size()));
  return Status();
}

}  // namespace strata::server
