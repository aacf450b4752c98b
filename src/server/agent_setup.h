// Start-up of the agent features of the API server: the grammar compiler for
// structured outputs (over the tokenizer's vocabulary), --tool-call-parser,
// --reasoning-parser, --structured-outputs-config, and the flags vLLM gates
// them with (--enable-auto-tool-choice, --trust-request-chat-template).
//
// Thread-safety: called once on the main thread before serving.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "server/server_context.h"
#include "tokenizer/tokenizer.h"

namespace strata::server {

struct AgentFlags {
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;            // "" = none
  std::string reasoning_parser;            // "" = none
  std::string structured_outputs_config;   // JSON object or ""
  bool trust_request_chat_template = false;
};

// The checks of configure_agents() that need no model (parser names, the
// flag rules, --structured-outputs-config), so a typo fails at once.
Status check_agent_flags(const AgentFlags& flags);

// ctx->engine must be set. Fills ctx->grammars, tool_parser, reasoning_parser, reasoning_end_ids and
// the agent fields of ctx->config. Errors: unknown parser names,
// --enable-auto-tool-choice without --tool-call-parser, a malformed or
// unknown key in --structured-outputs-config.
Status configure_agents(const AgentFlags& flags, const tokenizer::Tokenizer& tokenizer,
                        const std::vector<int32_t>& stop_token_ids, ServerContext* ctx);

// The grammar vocabulary of a tokenizer: each id's bytes and its special ids,
// for the ids below both the tokenizer's and the model's vocabulary size.
std::shared_ptr<const structured::TokenVocabulary> grammar_vocabulary(
    const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& stop_token_ids,
    int64_t model_vocab_size);

}  // namespace strata::server
