// ApiServer: the OpenAI/vLLM-compatible HTTP API over one Engine.
//
// Routes
//   POST /v1/completions, /v1/chat/completions   generation (handlers.h)
//   GET  /v1/models                               served names (+ root, max_model_len)
//   POST /tokenize, /detokenize                   tokenizer
//   GET  /health, /ping                           200, or 503 once the engine died
//   GET  /version, /load, /metrics                version, in-flight count, Prometheus
//   POST /reset_prefix_cache                      drop cached prefixes
// With API keys configured, /v1/* needs `Authorization: Bearer <key>` (401
// otherwise); the other routes stay open, as in vLLM.
//
// Every log_stats_interval_s while busy it logs vLLM's line ("Engine 000:
// Avg prompt throughput: ...").
//
// Lifecycle: run() serves on the calling thread (the I/O thread) until
// SIGINT/SIGTERM, then stops accepting, lets in-flight requests finish for up
// to shutdown_grace_s, and returns. Destroy the Engine before the ApiServer
// (its final callbacks post to the I/O context).
//
// Thread-safety: create() and run() on the main thread; everything else on
// the I/O thread.
#pragma once

#include <memory>

#include "server/http_server.h"
#include "server/json_writer.h"
#include "server/server_context.h"

namespace strata::server {

class ApiServer {
 public:
  static StatusOr<std::unique_ptr<ApiServer>> create(ServerContext ctx,
                                                     const HttpServerOptions& http);
  int port() const { return http_->port(); }
  void run();

 private:
  explicit ApiServer(ServerContext ctx) : ctx_(std::move(ctx)) {}
  void route(HttpRequest req, std::shared_ptr<HttpResponder> responder);
  bool authorized(const HttpRequest& req) const;
  void handle_models(HttpResponder& responder);
  // GET /v1/models/{id}: one served name's model object, else 404.
  void handle_model(const std::string& id, HttpResponder& responder);
  void write_model(JsonWriter& w, const std::string& name) const;
  void handle_reset_prefix_cache(std::shared_ptr<HttpResponder> responder);
  void begin_shutdown(int signal);
  void poll_shutdown(int64_t deadline_ms);
  void log_stats(engine::EngineStats last, int64_t last_ms);
  static void log_spec_decode(const engine::SpecDecodeStats& now, const engine::SpecDecodeStats& last);

  ServerContext ctx_;
  std::unique_ptr<HttpServer> http_;
  bool shutting_down_ = false;
};

}  // namespace strata::server
