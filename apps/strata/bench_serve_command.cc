// `strata bench serve`: flags, server probing, and one benchmark run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include "bench_serve/cache_report.h"
#include "bench_serve/conversation_runner.h"
#include "bench_serve/report.h"
#include "bench_serve.h"

namespace strata::app {
namespace {

using nlohmann::ordered_json;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (char c : text + ",") {
    if (c == ',' || c == ' ') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item.push_back(c);
    }
  }
  return out;
}

StatusOr<std::vector<double>> parse_doubles(const std::string& flag, const std::string& text) {
  std::vector<double> out;
  for (const std::string& item : split_list(text)) {
    char* end = nullptr;
    double v = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0') {
      return invalid_argument("--" + flag + ": '" + item + "' is not a number");
    }
    out.push_back(v);
  }
  return out;
}

StatusOr<bench::GoodputSlo> parse_goodput(const std::string& text) {
  bench::GoodputSlo slo;
  for (const std::string& item : split_list(text)) {
    size_t colon = item.find(':');
    StatusOr<std::vector<double>> v =
        parse_doubles("goodput", colon == std::string::npos ? "" : item.substr(colon + 1));
    if (colon == std::string::npos || !v.ok() || v->size() != 1) {
      return invalid_argument("--goodput expects KEY:MS pairs (ttft, tpot, e2el), got '" + item +
                              "'");
    }
    const std::string key = item.substr(0, colon);
    if (key == "ttft") {
      slo.ttft_ms = (*v)[0];
    } else if (key == "tpot") {
      slo.tpot_ms = (*v)[0];
    } else if (key == "e2el") {
      slo.e2el_ms = (*v)[0];
    } else {
      return invalid_argument("--goodput: unknown metric '" + key + "'; use ttft, tpot or e2el");
    }
  }
  return slo;
}

Status check_flags(const ServeBenchFlags& f) {
  if (f.endpoint != "/v1/completions" && f.endpoint != "/v1/chat/completions") {
    return invalid_argument("--endpoint " + f.endpoint +
                            ": use /v1/completions or /v1/chat/completions");
  }
  if (f.dataset != "random" && f.dataset != "prefix-repetition" && f.dataset != "multi-turn") {
    return invalid_argument("--dataset " + f.dataset +
                            ": use random, prefix-repetition or multi-turn");
  }
  if (f.random_range_ratio < 0 || f.random_range_ratio >= 1) {
    return invalid_argument("--random-range-ratio must be in [0, 1)");
  }
  if (f.min_token_id < 0 || f.vocab_size <= f.min_token_id) {
    return invalid_argument("--vocab-size " + std::to_string(f.vocab_size) +
                            " must exceed --min-token-id " + std::to_string(f.min_token_id));
  }
  if (!f.extra_body.empty()) {
    ordered_json extra = ordered_json::parse(f.extra_body, nullptr, false);
    if (!extra.is_object()) return invalid_argument("--extra-body must be a JSON object");
  }
  return Status();
}

// Distinguishes the request ids of concurrent benchmark clients.
std::string random_hex(int digits) {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < digits; ++i) out.push_back("0123456789abcdef"[rd() % 16]);
  return out;
}

StatusOr<bench::ClientOptions> make_client(const ServeBenchFlags& f) {
  bench::ClientOptions c;
  const std::string url =
      f.base_url.empty() ? "http://" + f.host + ":" + std::to_string(f.port) : f.base_url;
  STRATA_ASSIGN_OR_RETURN(c.base_url, bench::parse_base_url(url));
  c.endpoint_path = f.endpoint;
  c.is_chat = f.endpoint == "/v1/chat/completions";
  c.model = f.model;
  c.api_key = f.api_key;
  if (c.api_key.empty() && std::getenv("OPENAI_API_KEY") != nullptr) {
    c.api_key = std::getenv("OPENAI_API_KEY");
  }
  // vLLM forces ignore_eos for the random dataset: output lengths must be exact.
  c.ignore_eos = f.ignore_eos || f.dataset == "random";
  if (!f.temperature.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::vector<double> t, parse_doubles("temperature", f.temperature));
    if (t.size() == 1) c.temperature = t[0];
  }
  c.extra_body_json = f.extra_body;
  c.return_token_ids = f.dataset == "multi-turn" && !c.is_chat && f.multi_turn_return_token_ids;
  c.request_timeout_s = f.request_timeout_sec;
  return c;
}

}  // namespace

StatusOr<double> parse_rate(const std::string& text) {
  if (text == "inf" || text == "Inf" || text == "INF") return INFINITY;
  STRATA_ASSIGN_OR_RETURN(std::vector<double> v, parse_doubles("request-rate", text));
  if (v.size() != 1 || v[0] <= 0) {
    return invalid_argument("--request-rate expects 'inf' or a positive number, got '" + text +
                            "'");
  }
  return v[0];
}

StatusOr<BenchSetup> prepare_bench(const ServeBenchFlags& f) {
  STRATA_RETURN_IF_ERROR(check_flags(f));
  BenchSetup s;
  STRATA_ASSIGN_OR_RETURN(s.run.client, make_client(f));
  s.run.burstiness = f.burstiness;
  s.run.show_progress = !f.disable_tqdm;
  s.run.request_id_prefix = "strata-bench-" + random_hex(6) + "-";
  s.percentile_metrics = split_list(f.percentile_metrics);
  STRATA_ASSIGN_OR_RETURN(s.percentiles, parse_doubles("metric-percentiles", f.metric_percentiles));
  STRATA_ASSIGN_OR_RETURN(s.goodput, parse_goodput(f.goodput));
  s.token_range = {static_cast<int32_t>(f.min_token_id), static_cast<int32_t>(f.vocab_size)};
  StatusOr<bench::ModelInfo> info =
      bench::fetch_model_info(s.run.client, f.ready_check_timeout_sec);
  if (info.ok()) {
    s.model = *info;
  } else if (f.model.empty()) {
    return Status(info.status().code(),
                  info.status().message() + " (give --model when the server has no /v1/models)");
  }
  if (s.run.client.model.empty()) s.run.client.model = s.model.id;
  if (s.model.id.empty()) s.model.id = s.run.client.model;
  if (f.max_model_len > 0) s.model.max_model_len = f.max_model_len;
  if (s.run.client.is_chat) {
    StatusOr<double> tpw =
        bench::measure_tokens_per_word(s.run.client, static_cast<uint64_t>(f.seed));
    s.tokens_per_word = tpw.ok() ? *tpw : 1.0;
    std::fprintf(stderr, "chat prompts: %.3f tokens per word (%s)\n", s.tokens_per_word,
                 tpw.ok() ? "measured with POST /tokenize" : "assumed; /tokenize unavailable");
  }
  return s;
}

PointParams base_point(const ServeBenchFlags& f) {
  PointParams p;
  p.max_concurrency = f.max_concurrency;
  p.request_rate = parse_rate(f.request_rate).ok() ? *parse_rate(f.request_rate) : INFINITY;
  p.num_prompts = f.num_prompts;
  p.num_conversations =
      f.multi_turn_num_conversations > 0 ? f.multi_turn_num_conversations : f.num_prompts;
  p.seed = static_cast<uint64_t>(f.seed);
  return p;
}

namespace {

struct Workload {
  std::vector<bench::DatasetPrompt> prompts;       // random, prefix-repetition
  std::vector<bench::Conversation> conversations;  // multi-turn
  std::vector<bench::DatasetPrompt> warmups;
  int64_t num_requests = 0;
};

// The dataset seed: --seed (plus the sweep index) mixed with the dataset's
// name, so different datasets with one seed never share prompts (a random
// run would otherwise pre-warm the cache for a multi-turn run).
uint64_t dataset_seed(const std::string& dataset, uint64_t seed) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : dataset) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h ^ seed;
}

Workload make_workload(const ServeBenchFlags& f, const BenchSetup& s, PointParams p) {
  const bench::PromptSource source(s.run.client.is_chat, s.token_range, s.tokens_per_word);
  p.seed = dataset_seed(f.dataset, p.seed);
  Workload w;
  if (f.dataset == "multi-turn") {
    w.conversations = bench::make_multi_turn_dataset(
        {p.num_conversations, f.multi_turn_first_len, f.multi_turn_num_rounds,
         f.multi_turn_round_len, f.multi_turn_output_len, f.random_prefix_len, p.seed},
        source);
    w.num_requests = p.num_conversations * (1 + f.multi_turn_num_rounds);
    // Warm-ups get prompts of their own: the conversations must start cold.
    w.warmups = bench::make_random_dataset(
        {f.num_warmups, f.multi_turn_first_len, f.multi_turn_output_len, 0, 0, p.seed + 7919},
        source);
    return w;
  }
  if (f.dataset == "random") {
    w.prompts = bench::make_random_dataset({p.num_prompts, f.random_input_len, f.random_output_len,
                                            f.random_range_ratio, f.random_prefix_len, p.seed},
                                           source);
  } else {
    w.prompts = bench::make_prefix_repetition_dataset(
        {p.num_prompts, f.prefix_repetition_prefix_len, f.prefix_repetition_suffix_len,
         f.prefix_repetition_num_prefixes, f.prefix_repetition_output_len, p.seed},
        source);
  }
  w.num_requests = static_cast<int64_t>(w.prompts.size());
  if (!w.prompts.empty()) w.warmups.assign(static_cast<size_t>(f.num_warmups), w.prompts[0]);
  return w;
}

std::vector<bench::PromSample> scrape(const bench::ClientOptions& c) {
  StatusOr<std::string> text = bench::fetch_metrics_text(c);
  if (!text.ok()) return {};
  StatusOr<std::vector<bench::PromSample>> samples = bench::parse_prometheus_text(*text);
  return samples.ok() ? *samples : std::vector<bench::PromSample>{};
}

double cached_prompt_fraction(const std::vector<bench::RequestRecord>& records) {
  double prompt = 0, cached = 0;
  bool any = false;
  for (const bench::RequestRecord& r : records) {
    if (!r.success || r.cached_tokens < 0) continue;
    any = true;
    prompt += static_cast<double>(r.prompt_len);
    cached += static_cast<double>(r.cached_tokens);
  }
  return any && prompt > 0 ? cached / prompt : -1;
}

bench::RunDescription describe(const ServeBenchFlags& f, const BenchSetup& s, const PointParams& p,
                               int64_t num_requests) {
  bench::RunDescription d;
  d.date = bench::timestamp_now();
  d.backend = s.run.client.is_chat ? "openai-chat" : "openai";
  d.label = f.label;
  d.model_id = s.model.id;
  d.tokenizer_id = s.model.root;
  d.base_url = s.run.client.base_url.to_string();
  d.endpoint = f.endpoint;
  d.dataset_name = f.dataset;
  d.num_prompts = num_requests;
  d.request_rate = p.request_rate;
  d.burstiness = f.burstiness;
  d.max_concurrency = p.max_concurrency;
  d.percentile_metrics = s.percentile_metrics;
  return d;
}

void add_multi_turn_json(const ServeBenchFlags& f, const PointParams& p,
                         const bench::ConversationRunResult& conv, ordered_json* j) {
  (*j)["num_conversations"] = p.num_conversations;
  (*j)["multi_turn"] = {{"first_turn_len", f.multi_turn_first_len},
                        {"num_rounds", f.multi_turn_num_rounds},
                        {"round_len", f.multi_turn_round_len},
                        {"output_len", f.multi_turn_output_len},
                        {"max_active_conversations", f.multi_turn_max_active_conversations},
                        {"truncated_conversations", conv.num_truncated_conversations},
                        {"answers_with_streamed_ids", conv.num_answers_streamed_ids},
                        {"answers_tokenized", conv.num_answers_tokenized},
                        {"answers_filler_ids", conv.num_answers_filler}};
  (*j)["per_turn"] = bench::turn_stats_json(bench::per_turn_stats(conv.run.records));
}

}  // namespace

StatusOr<ordered_json> run_bench_point(const ServeBenchFlags& f, const BenchSetup& s,
                                       const PointParams& p) {
  bench::RunOptions o = s.run;
  o.max_concurrency = p.max_concurrency;
  o.request_rate = p.request_rate;
  o.seed = p.seed;
  if (f.reset_prefix_cache) {
    if (Status r = bench::reset_prefix_cache(o.client); !r.ok()) {
      std::fprintf(stderr, "warning: %s\n", r.message().c_str());
    }
  }
  const Workload w = make_workload(f, s, p);
  bench::run_warmups(o, w.warmups);
  const std::vector<bench::PromSample> before = scrape(o.client);
  bench::ConversationRunResult conv;
  if (f.dataset == "multi-turn") {
    bench::ConversationOptions c{s.model.max_model_len, f.multi_turn_max_active_conversations,
                                 s.token_range};
    conv = bench::run_conversations(o, c, w.conversations);
  } else {
    conv.run = bench::run_prompts(o, w.prompts);
  }
  const bench::CacheReport cache = bench::compute_cache_report(before, scrape(o.client));
  const bench::ServingMetrics m = bench::compute_serving_metrics(
      conv.run.records, conv.run.duration_s, s.percentiles, s.goodput);
  const bench::RunDescription d = describe(f, s, p, w.num_requests);
  bench::print_summary(stdout, d, m);
  ordered_json j = bench::result_json(d, m, conv.run.records, f.save_detailed);
  if (f.dataset == "multi-turn") {
    bench::print_turn_table(stdout, bench::per_turn_stats(conv.run.records));
    add_multi_turn_json(f, p, conv, &j);
    if (conv.num_truncated_conversations > 0) {
      std::printf("%lld conversations ended early: next turn would exceed max_model_len %lld\n",
                  static_cast<long long>(conv.num_truncated_conversations),
                  static_cast<long long>(s.model.max_model_len));
    }
  }
  print_cache_report(stdout, cache);
  const double cached = cached_prompt_fraction(conv.run.records);
  if (cached >= 0) std::printf("prompt tokens reported cached (usage): %.2f%%\n", cached * 100);
  j["cached_prompt_fraction"] = cached >= 0 ? ordered_json(cached) : nullptr;
  j["prefix_cache"] = bench::cache_report_json(cache);
  for (const bench::RequestRecord& r : conv.run.records) {
    if (!r.success) {
      std::fprintf(stderr, "first failure: %s\n", r.error.c_str());
      break;
    }
  }
  std::fflush(stdout);
  return j;
}

Status write_json_file(const std::string& path, const ordered_json& j) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return invalid_argument("cannot write " + path);
  out << j.dump(2) << "\n";
  return out ? Status() : internal_error("writing " + path + " failed");
}

namespace {

std::string default_result_path(const ServeBenchFlags& f, const ordered_json& j) {
  if (!f.result_file.empty()) return f.result_file;
  std::string name = f.result_filename;
  if (name.empty()) {
    const std::string rate = j["request_rate"].is_string() ? "inf" : j["request_rate"].dump();
    std::string model = j["model_id"].get<std::string>();
    if (size_t slash = model.find_last_of('/'); slash != std::string::npos)
      model = model.substr(slash + 1);
    name = (f.label.empty() ? j["backend"].get<std::string>() : f.label) + "-" + rate + "qps";
    if (!j["max_concurrency"].is_null()) name += "-concurrency" + j["max_concurrency"].dump();
    name += "-" + model + "-" + j["date"].get<std::string>() + ".json";
  }
  return f.result_dir + "/" + name;
}

int fail(const Status& s) {
  std::fprintf(stderr, "strata bench serve: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int run_serve_bench(const std::vector<std::string>& args) {
  ServeBenchFlags f;
  FlagSet flags("bench serve");
  register_serve_bench_flags(flags, f);
  if (Status s = flags.parse(args); !s.ok()) return fail(s);
  if (flags.help_requested()) {
    std::fputs(flags.usage().c_str(), stdout);
    return 0;
  }
  // vLLM spellings: prefix_repetition, multi_turn; --backend openai-chat.
  std::replace(f.dataset.begin(), f.dataset.end(), '_', '-');
  if (f.backend == "openai-chat" && !flags.was_set("endpoint")) f.endpoint = "/v1/chat/completions";
  if (Status s = parse_rate(f.request_rate).status(); !s.ok()) return fail(s);
  StatusOr<BenchSetup> setup = prepare_bench(f);
  if (!setup.ok()) return fail(setup.status());
  if (is_sweep(f)) return run_bench_sweep(f, *setup);
  StatusOr<ordered_json> result = run_bench_point(f, *setup, base_point(f));
  if (!result.ok()) return fail(result.status());
  if (f.save_result || !f.result_file.empty()) {
    const std::string path = default_result_path(f, *result);
    if (Status s = write_json_file(path, *result); !s.ok()) return fail(s);
    std::fprintf(stderr, "result saved to %s\n", path.c_str());
  }
  // As vLLM: failed requests are reported, not fatal; a run with none completed is.
  return (*result)["completed"].get<int64_t>() > 0 ? 0 : 1;
}

}  // namespace strata::app
