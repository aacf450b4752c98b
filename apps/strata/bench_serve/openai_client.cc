#include "bench_serve/openai_client.h"

#include <nlohmann/json.hpp>

#include "bench_serve/openai_stream.h"

namespace strata::bench {
namespace {

using nlohmann::ordered_json;

ordered_json common_fields(const ClientOptions& o, int64_t max_tokens) {
  ordered_json j;
  j["model"] = o.model;
  j["max_tokens"] = max_tokens;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  if (o.ignore_eos) j["ignore_eos"] = true;
  if (o.temperature) j["temperature"] = *o.temperature;
  if (o.return_token_ids) j["return_token_ids"] = true;
  return j;
}

std::string finish_body(const ClientOptions& o, ordered_json j) {
  if (!o.extra_body_json.empty()) {
    ordered_json extra = ordered_json::parse(o.extra_body_json, nullptr, false);
    if (extra.is_object()) {
      for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
    }
  }
  return j.dump();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> auth_headers(const ClientOptions& o) {
  std::vector<std::pair<std::string, std::string>> h;
  if (!o.api_key.empty()) h.emplace_back("Authorization", "Bearer " + o.api_key);
  return h;
}

std::string make_completion_body(const ClientOptions& o, const PromptText& prompt,
                                 int64_t max_tokens) {
  ordered_json j = common_fields(o, max_tokens);
  if (prompt.text.empty() && !prompt.token_ids.empty()) {
    j["prompt"] = prompt.token_ids;
  } else {
    j["prompt"] = prompt.text;
  }
  return finish_body(o, std::move(j));
}

std::string make_chat_body(const ClientOptions& o, const std::vector<ChatMessage>& messages,
                           int64_t max_tokens) {
  ordered_json j = common_fields(o, max_tokens);
  j["max_completion_tokens"] = max_tokens;
  ordered_json list = ordered_json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  j["messages"] = std::move(list);
  return finish_body(o, std::move(j));
}

RequestRecord send_streamed(const ClientOptions& o, const std::string& body, int64_t prompt_len,
                            Clock::time_point epoch, const std::string& request_id) {
  HttpRequest request;
  request.method = "POST";
  request.path = o.endpoint_path;
  request.body = body;
  request.headers = auth_headers(o);
  request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("x-request-id", request_id);
  RequestRecord record;
  record.prompt_len = prompt_len;
  const Clock::time_point start = Clock::now();
  record.start_s = std::chrono::duration<double>(start - epoch).count();
  StreamAccumulator stream(o.is_chat, start);
  ResponseSink sink;
  sink.on_body = [&stream](std::string_view bytes, Clock::time_point when) {
    stream.on_bytes(bytes, when);
    return true;
  };
  StatusOr<int> status = http_stream(o.base_url, request, o.request_timeout_s, sink);
  stream.finish(status.ok() ? *status : 0, status.ok() ? "" : status.status().message(), &record);
  return record;
}

}  // namespace strata::bench
