// The API server's endpoint handlers. Each runs on the I/O thread, parses
// and validates its request, and answers through the responder (at once, or
// later via a GenerationJob).
//
//   handle_completions        POST /v1/completions
//   handle_chat_completions   POST /v1/chat/completions
//   handle_tokenize           POST /tokenize
//   handle_detokenize         POST /detokenize
//
// Thread-safety: I/O thread only.
#pragma once

#include <memory>

#include "server/api_error.h"
#include "server/http_server.h"
#include "server/server_context.h"

namespace strata::server {

void handle_completions(ServerContext& ctx, const HttpRequest& req,
                        std::shared_ptr<HttpResponder> responder);
void handle_chat_completions(ServerContext& ctx, const HttpRequest& req,
                             std::shared_ptr<HttpResponder> responder);
void handle_tokenize(ServerContext& ctx, const HttpRequest& req,
                     std::shared_ptr<HttpResponder> responder);
void handle_detokenize(ServerContext& ctx, const HttpRequest& req,
                       std::shared_ptr<HttpResponder> responder);

// Answers `error` in the OpenAI envelope.
void reply_error(HttpResponder& responder, const ApiError& error);

}  // namespace strata::server
