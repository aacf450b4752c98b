#include "bench_serve/server_probe.h"

#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench_serve/datasets.h"

namespace strata::bench {
namespace {

using nlohmann::json;

constexpr double kProbeTimeoutS = 30;

StatusOr<json> fetch_json(const ClientOptions& o, const std::string& method,
                          const std::string& path, const std::string& body) {
  HttpRequest r;
  r.method = method;
  r.path = path;
  r.body = body;
  r.headers = auth_headers(o);
  if (!body.empty()) r.headers.emplace_back("Content-Type", "application/json");
  STRATA_ASSIGN_OR_RETURN(HttpResponse resp, http_fetch(o.base_url, r, kProbeTimeoutS));
  if (resp.status != 200) {
    return unavailable(method + " " + path + ": HTTP " + std::to_string(resp.status) + " " +
                       resp.body.substr(0, 300));
  }
  json j = json::parse(resp.body, nullptr, false);
  if (j.is_discarded()) return data_loss(method + " " + path + ": response is not JSON");
  return j;
}

StatusOr<std::vector<int32_t>> tokens_of(const json& j) {
  auto it = j.find("tokens");
  if (it == j.end() || !it->is_array()) return data_loss("/tokenize: no 'tokens' array");
  std::vector<int32_t> ids;
  for (const json& t : *it) {
    if (t.is_number_integer()) {
      ids.push_back(t.get<int32_t>());
    } else if (t.is_object() && t.contains("id")) {  // llama.cpp with_pieces
      ids.push_back(t["id"].get<int32_t>());
    }
  }
  return ids;
}

StatusOr<ModelInfo> model_info_once(const ClientOptions& o) {
  STRATA_ASSIGN_OR_RETURN(json j, fetch_json(o, "GET", "/v1/models", ""));
  auto data = j.find("data");
  if (data == j.end() || !data->is_array() || data->empty()) {
    return data_loss("GET /v1/models: no models listed");
  }
  const json* pick = &(*data)[0];
  for (const json& m : *data) {
    if (!o.model.empty() && m.value("id", "") == o.model) pick = &m;
  }
  ModelInfo info;
  info.id = pick->value("id", "");
  info.root = pick->value("root", info.id);
  if (auto len = pick->find("max_model_len"); len != pick->end() && len->is_number_integer()) {
    info.max_model_len = len->get<int64_t>();
  }
  return info;
}

}  // namespace

StatusOr<ModelInfo> fetch_model_info(const ClientOptions& o, double ready_timeout_s) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(ready_timeout_s * 1000));
  while (true) {
    StatusOr<ModelInfo> info = model_info_once(o);
    if (info.ok() || Clock::now() >= deadline) return info;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

StatusOr<std::vector<int32_t>> tokenize_text(const ClientOptions& o, const std::string& text) {
  json vllm_form = {{"prompt", text}, {"add_special_tokens", false}};
  if (!o.model.empty()) vllm_form["model"] = o.model;
  StatusOr<json> j = fetch_json(o, "POST", "/tokenize", vllm_form.dump());
  // llama-server ignores `prompt` and answers 200 {"tokens": []}: then try its own form.
  if (j.ok() && j->contains("tokens") && (text.empty() || !(*j)["tokens"].empty())) {
    return tokens_of(*j);
  }
  json llama_form = {{"content", text}, {"add_special", false}};
  StatusOr<json> k = fetch_json(o, "POST", "/tokenize", llama_form.dump());
  if (!k.ok()) return j.ok() ? k.status() : j.status();
  return tokens_of(*k);
}

StatusOr<double> measure_tokens_per_word(const ClientOptions& o, uint64_t seed) {
  constexpr int64_t kWords = 2000;
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenize_text(o, sample_words(kWords, rng)));
  if (ids.empty()) return data_loss("/tokenize returned no tokens for 2000 words");
  return static_cast<double>(ids.size()) / static_cast<double>(kWords);
}

StatusOr<std::string> fetch_metrics_text(const ClientOptions& o) {
  HttpRequest r;
  r.path = "/metrics";
  r.headers = auth_headers(o);
  STRATA_ASSIGN_OR_RETURN(HttpResponse resp, http_fetch(o.base_url, r, kProbeTimeoutS));
  if (resp.status != 200) return unavailable("GET /metrics: HTTP " + std::to_string(resp.status));
  return resp.body;
}

Status reset_prefix_cache(const ClientOptions& o) {
  HttpRequest r;
  r.method = "POST";
  r.path = "/reset_prefix_cache";
  r.headers = auth_headers(o);
  STRATA_ASSIGN_OR_RETURN(HttpResponse resp, http_fetch(o.base_url, r, kProbeTimeoutS));
  if (resp.status != 200) {
    return unavailable("POST /reset_prefix_cache: HTTP " + std::to_string(resp.status));
  }
  return Status();
}

}  // namespace strata::bench
