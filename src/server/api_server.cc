#include "server/api_server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/hex.h"
#include "base/log.h"
#include "server/handlers.h"
#include "server/json_writer.h"

namespace strata::server {
namespace {

// %XX escapes in a path segment (model ids like "org%2Fname").
std::string url_decode(std::string_view s) {
  std::string out;
  auto hex = [](char c) { return hex_digit_value(static_cast<unsigned char>(c)); };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// `given` (from the client) against `key`: the time depends only on the
// given string's length, never on where it differs or on the key's length.
bool constant_time_equal(const std::string& given, const std::string& key) {
  if (key.empty()) return given.empty();
  size_t diff = given.size() ^ key.size();
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ key[i % key.size()]);
  }
  return diff == 0;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StatusOr<std::unique_ptr<ApiServer>> ApiServer::create(ServerContext ctx,
                                                       const HttpServerOptions& http) {
  std::unique_ptr<ApiServer> server(new ApiServer(std::move(ctx)));
  ApiServer* self = server.get();
  StatusOr<std::unique_ptr<HttpServer>> created =
      HttpServer::create(http, [self](HttpRequest req, std::shared_ptr<HttpResponder> responder) {
        self->route(std::move(req), std::move(responder));
      });
  if (!created.ok()) return created.status();
  server->http_ = std::move(*created);
  server->ctx_.http = server->http_.get();
  return server;
}

void ApiServer::run() {
  http_->on_signal([this](int sig) { begin_shutdown(sig); });
  if (ctx_.config.log_stats_interval_s > 0) log_stats(ctx_.engine->stats(), now_ms());
  http_->run();
}

// vLLM's "SpecDecoding metrics" line, over the interval since the last one.
void ApiServer::log_spec_decode(const engine::SpecDecodeStats& now,
                                const engine::SpecDecodeStats& last) {
  const int64_t drafts = now.num_drafts - last.num_drafts;
  if (drafts <= 0) return;
  const int64_t draft_tokens = now.num_draft_tokens - last.num_draft_tokens;
  const int64_t accepted = now.num_accepted_tokens - last.num_accepted_tokens;
  std::string per_pos;
  for (size_t i = 0; i < now.num_accepted_tokens_per_pos.size(); ++i) {
    const int64_t before =
        i < last.num_accepted_tokens_per_pos.size() ? last.num_accepted_tokens_per_pos[i] : 0;
    char rate[16];
    std::snprintf(rate, sizeof(rate), "%.3f",
                  static_cast<double>(now.num_accepted_tokens_per_pos[i] - before) / drafts);
    per_pos += (per_pos.empty() ? "" : ", ") + std::string(rate);
  }
  char line[256];
  std::snprintf(line, sizeof(line),
                "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted: %lld tokens, "
                "Drafted: %lld tokens, Draft acceptance rate: %.1f%%, ",
                1.0 + static_cast<double>(accepted) / drafts, static_cast<long long>(accepted),
                static_cast<long long>(draft_tokens),
                draft_tokens > 0 ? 100.0 * accepted / draft_tokens : 0.0);
  STRATA_LOG(kInfo) << line << "Per-position acceptance rate: " << per_pos;
}

// The line operators grep in vLLM logs, printed only while there is work.
void ApiServer::log_stats(engine::EngineStats last, int64_t last_ms) {
  engine::EngineStats s = ctx_.engine->stats();
  const int64_t t = now_ms();
  const double dt = std::max<int64_t>(1, t - last_ms) / 1000.0;
  const bool busy = s.num_running > 0 || s.num_waiting > 0 ||
                    s.num_generation_tokens != last.num_generation_tokens ||
                    s.num_prompt_tokens_computed != last.num_prompt_tokens_computed;
  if (busy && last_ms > 0) {
    const int64_t queries = s.prefix_cache_queries - last.prefix_cache_queries;
    const int64_t hits = s.prefix_cache_hits - last.prefix_cache_hits;
    char line[320];
    std::snprintf(line, sizeof(line),
                  "Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: "
                  "%.1f tokens/s, Running: %lld reqs, Waiting: %lld reqs, GPU KV cache usage: "
                  "%.1f%%, Prefix cache hit rate: %.1f%%",
                  (s.num_prompt_tokens_computed - last.num_prompt_tokens_computed) / dt,
                  (s.num_generation_tokens - last.num_generation_tokens) / dt,
                  static_cast<long long>(s.num_running), static_cast<long long>(s.num_waiting),
                  100.0 * s.kv_cache_usage, queries > 0 ? 100.0 * hits / queries : 0.0);
    STRATA_LOG(kInfo) << line;
    log_spec_decode(s.spec_decode, last.spec_decode);
  }
  http_->post_after(ctx_.config.log_stats_interval_s * 1000, [this, s, t] { log_stats(s, t); });
}

bool ApiServer::authorized(const HttpRequest& req) const {
  if (ctx_.config.api_keys.empty()) return true;
  const std::string& h = req.authorization;
  if (h.size() < 7) return false;
  std::string scheme = h.substr(0, 7);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer ") return false;
  std::string key = h.substr(7);
  bool ok = false;
  for (const std::string& k : ctx_.config.api_keys) ok |= constant_time_equal(key, k);
  return ok;
}

void ApiServer::route(HttpRequest req, std::shared_ptr<HttpResponder> responder) {
  const std::string& p = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";
  const bool post = req.method == "POST";
  if (p.rfind("/v1/", 0) == 0 && !authorized(req)) {
    return reply_error(*responder, ApiError::unauthorized());
  }
  if (post && p == "/v1/completions") return handle_completions(ctx_, req, responder);
  if (post && p == "/v1/chat/completions") return handle_chat_completions(ctx_, req, responder);
  if (get && p == "/v1/models") return handle_models(*responder);
  if (get && p.rfind("/v1/models/", 0) == 0) {
    return handle_model(url_decode(p.substr(std::string_view("/v1/models/").size())), *responder);
  }
  if (post && p == "/tokenize") return handle_tokenize(ctx_, req, responder);
  if (post && p == "/detokenize") return handle_detokenize(ctx_, req, responder);
  if ((get || post) && (p == "/health" || p == "/ping")) {
    return responder->reply(ctx_.engine->is_healthy() ? 200 : 503, "application/json", "");
  }
  if (get && p == "/version") {
    return responder->reply(
        200, "application/json",
        JsonWriter().begin_object().key("version").value(ctx_.config.version).end_object().take());
  }
  if (get && p == "/load") {
    return responder->reply(200, "application/json",
                            JsonWriter()
                                .begin_object()
                                .key("server_load")
                                .value(ctx_.num_in_flight)
                                .end_object()
                                .take());
  }
  if (get && p == "/metrics") {
    return responder->reply(200, "text/plain; version=0.0.4; charset=utf-8",
                            ctx_.metrics->render(ctx_.engine->stats()));
  }
  if (post && p == "/reset_prefix_cache") return handle_reset_prefix_cache(responder);
  static const char* const kRoutes[] = {"/v1/completions",
                                        "/v1/chat/completions",
                                        "/v1/models",
                                        "/tokenize",
                                        "/detokenize",
                                        "/health",
                                        "/ping",
                                        "/version",
                                        "/load",
                                        "/metrics",
                                        "/reset_prefix_cache"};
  for (const char* route : kRoutes) {
    if (p == route) {
      return reply_error(*responder, ApiError{405, "Method Not Allowed", "", ""});
    }
  }
  reply_error(*responder, ApiError::not_found("Not Found: " + req.method + " " + p));
}

void ApiServer::write_model(JsonWriter& w, const std::string& name) const {
  w.begin_object();
  w.key("id").value(name).key("object").value("model");
  w.key("created").value(ctx_.config.created).key("owned_by").value("vllm");
  w.key("root").value(ctx_.config.model_root).key("parent").null();
  w.key("max_model_len").value(ctx_.config.max_model_len);
  w.key("permission").begin_array().end_array();
  w.end_object();
}

void ApiServer::handle_models(HttpResponder& responder) {
  JsonWriter w;
  w.begin_object().key("object").value("list").key("data").begin_array();
  for (const std::string& name : ctx_.config.served_model_names) write_model(w, name);
  w.end_array().end_object();
  responder.reply(200, "application/json", w.take());
}

void ApiServer::handle_model(const std::string& id, HttpResponder& responder) {
  const auto& names = ctx_.config.served_model_names;
  if (std::find(names.begin(), names.end(), id) == names.end()) {
    return reply_error(responder,
                       ApiError::not_found("The model `" + id + "` does not exist.", "model"));
  }
  JsonWriter w;
  write_model(w, id);
  responder.reply(200, "application/json", w.take());
}

// The engine answers between steps, on its thread; the reply goes out on the
// I/O thread.
void ApiServer::handle_reset_prefix_cache(std::shared_ptr<HttpResponder> responder) {
  HttpServer* http = http_.get();
  ctx_.engine->reset_prefix_cache([http, responder](bool ok) {
    http->post([ok, responder] {
      if (ok) return responder->reply(200, "application/json", "");
      reply_error(*responder,
                  ApiError::unavailable("the prefix cache cannot be reset while requests hold KV "
                                        "blocks; retry when the server is idle"));
    });
  });
}

void ApiServer::begin_shutdown(int signal) {
  if (shutting_down_) return;
  shutting_down_ = true;
  STRATA_LOG(kInfo) << "signal " << signal << ": stopping; waiting up to "
                    << ctx_.config.shutdown_grace_s << " s for " << ctx_.num_in_flight
                    << " in-flight requests";
  http_->stop_accepting();
  http_->on_signal([this](int) { http_->stop(); });  // a second signal stops at once
  poll_shutdown(now_ms() + ctx_.config.shutdown_grace_s * 1000);
}

void ApiServer::poll_shutdown(int64_t deadline_ms) {
  if (ctx_.num_in_flight == 0 || now_ms() >= deadline_ms) {
    if (ctx_.num_in_flight > 0) {
      STRATA_LOG(kWarning) << "aborting " << ctx_.num_in_flight << " requests at shutdown";
    }
    // Let the last answers flush before stopping the I/O loop.
    http_->post_after(50, [this] { http_->stop(); });
    return;
  }
  http_->post_after(50, [this, deadline_ms] { poll_shutdown(deadline_ms); });
}

}  // namespace strata::server
