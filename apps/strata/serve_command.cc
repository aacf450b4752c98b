// `strata serve [MODEL]`: the OpenAI/vLLM-compatible HTTP server. Flag names
// and meanings follow `vllm serve`; vLLM flags that mean nothing here are
// accepted with a one-line warning, unknown flags are errors with a
// suggestion. Listens only once the model is loaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/cpu_features.h"
#include "base/log.h"
#include "commands.h"
#include "engine/engine.h"
#include "engine/step_budget.h"
#include "engine/tokenizer_loader.h"
#include "flags.h"
#include "kernel_calibration_flag.h"
#include "model/arch/architecture.h"
#include "model/loader/model_files.h"
#include "model/model.h"
#include "ops/kernel_calibration.h"
#include "offload/tiers/p2p/p2p_tier.h"
#include "server/agent_setup.h"
#include "server/api_server.h"
#include "server/kv_events_config.h"
#include "server/kv_transfer_config.h"
#include "server/model_assets.h"
#include "server/speculative_config.h"
#include "tensor/kv_cache_dtype.h"

namespace strata::app {
namespace {

struct ServeFlags {
  std::string kernel_calibration = "auto";
  std::string model;       // as given: a path or a Hugging Face id (the default served name)
  std::string model_path;  // where it was found (locate_model)
  std::string revision;
  std::string download_dir;
  std::string host = "0.0.0.0";
  int64_t port = 8000;
  std::string served_model_name;
  std::string max_model_len = "auto";
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 0;  // 0 = auto (engine/step_budget.h)
  int64_t block_size = 16;
  bool enable_prefix_caching = true;
  std::string kv_cache_memory;
  std::string kv_cache_dtype = "auto";
  double gpu_memory_utilization = 0.9;
  std::string cpu_kv_budget = "1GiB";
  std::string kv_transfer_config;
  std::string kv_events_config;
  std::string speculative_config;
  double kv_offloading_size_gib = 0;
  std::string kv_offloading_backend = "native";
  int64_t seed = 0;
  std::string api_key;
  std::string chat_template;
  std::string generation_config = "auto";
  std::string dtype = "auto";
  int64_t threads = 0;
  int64_t max_pending_requests = 0;
  std::string max_request_body = "32MiB";
  int64_t shutdown_timeout = 10;
  bool disable_log_stats = false;
  server::AgentFlags agents;
};

// vLLM flags accepted for compatibility that change nothing here.
const char* const kIgnoredValueFlags[] = {"swap-space",
                                          "tensor-parallel-size",
                                          "pipeline-parallel-size",
                                          "data-parallel-size",
                                          "load-format",
                                          "tokenizer",
                                          "tokenizer-mode",
                                          "uvicorn-log-level",
                                          "max-logprobs",
                                          "chat-template-content-format",
                                          "override-generation-config",
                                          "prefix-caching-hash-algo",
                                          "quantization",
                                          "distributed-executor-backend",
                                          "long-prefill-token-threshold",
                                          "max-num-partial-prefills",
                                          "allowed-origins",
                                          "root-path",
                                          "middleware",
                                          "response-role",
                                          "compilation-config"};
const char* const kIgnoredBoolFlags[] = {"trust-remote-code",
                                         "enforce-eager",
                                         "disable-log-requests",
                                         "enable-log-requests",
                                         "enable-chunked-prefill",
                                         "enable-prompt-tokens-details",
                                         "disable-frontend-multiprocessing",
                                         "disable-fastapi-docs",
                                         "enable-force-include-usage",
                                         "enable-request-id-headers",
                                         "disable-uvicorn-access-log"};

// "LlamaForCausalLM, Qwen2ForCausalLM, ..." for --help.
std::string supported_architecture_list() {
  std::string list;
  for (const model::ArchitectureSpec* spec : model::all_architectures()) {
    list += std::string(list.empty() ? "" : ", ") + spec->hf_name;
  }
  return list;
}

void register_flags(FlagSet& flags, ServeFlags& f) {
  flags.add_string("model", &f.model,
                   "model directory (Hugging Face layout), .gguf file, or a Hugging Face id "
                   "found in the local HF cache; architectures: " +
                       supported_architecture_list());
  flags.add_string("revision", &f.revision,
                   "with a Hugging Face id: the branch, tag or commit in the HF cache (main)");
  flags.add_string("download-dir", &f.download_dir,
                   "with a Hugging Face id: the HF cache root to look in (never downloads)");
  flags.add_string("host", &f.host, "address to listen on");
  flags.add_int("port", &f.port, "port to listen on");
  flags.add_string("served-model-name", &f.served_model_name,
                   "model names clients use (several allowed; the first is reported)");
  flags.add_string("max-model-len", &f.max_model_len,
                   "context length (e.g. 4096, 32k); auto = the model's max_position_embeddings");
  flags.add_int("max-num-seqs", &f.max_num_seqs, "maximum running requests");
  flags.add_int("max-num-batched-tokens", &f.max_num_batched_tokens,
                "tokens per engine step (decodes + prefill chunks); 0 = auto: the smallest "
                "multiple of 256 (up to 2048) whose prefill outweighs a step's fixed cost "
                "10 to 1 (256 for 0.5B+ models)");
  flags.add_int("block-size", &f.block_size, "tokens per KV block");
  flags.add_bool("enable-prefix-caching", &f.enable_prefix_caching, "reuse cached prompt prefixes");
  flags.add_string("kv-cache-memory", &f.kv_cache_memory,
                   "KV cache size in bytes (suffixes KiB MiB GiB KB MB GB); overrides "
                   "--gpu-memory-utilization");
  flags.add_string("kv-cache-dtype", &f.kv_cache_dtype,
                   "KV cache element type: auto (the weights' dtype), bfloat16, float16, "
                   "float32, fp8 (= fp8_e4m3), fp8_e5m2; fp8 scales come from the checkpoint's "
                   "k_scale/v_scale, else per token and head");
  flags.add_double("gpu-memory-utilization", &f.gpu_memory_utilization,
                   "fraction of --cpu-kv-budget used for the KV cache");
  flags.add_string("cpu-kv-budget", &f.cpu_kv_budget, "memory budget for the KV cache");
  flags.add_string("kv-transfer-config", &f.kv_transfer_config,
                   "tiered KV cache, vLLM's OffloadingConnector JSON (host + filesystem tiers)");
  flags.add_double("kv-offloading-size", &f.kv_offloading_size_gib,
                   "GiB of host memory for offloaded KV (short form of --kv-transfer-config)");
  flags.add_string("kv-offloading-backend", &f.kv_offloading_backend,
                   "with --kv-offloading-size: native (the only backend)");
  flags.add_string("kv-events-config", &f.kv_events_config, "vLLM KV events config (JSON)");
  flags.add_string("speculative-config", &f.speculative_config,
                   "speculative decoding, vLLM's JSON: {\"method\": \"ngram\", "
                   "\"num_speculative_tokens\": 4, \"prompt_lookup_max\": 4, "
                   "\"prompt_lookup_min\": 2} or {\"method\": \"draft_model\", "
                   "\"model\": \"PATH\", \"num_speculative_tokens\": 4}");
  flags.add_int("seed", &f.seed, "seed for requests that give none");
  flags.add_string("api-key", &f.api_key, "require this key on /v1/* (also VLLM_API_KEY)");
  flags.add_string("chat-template", &f.chat_template, "chat template file (or inline text)");
  flags.add_string("generation-config", &f.generation_config,
                   "sampling defaults: auto (model's generation_config.json), vllm, or DIR");
  flags.add_string("dtype", &f.dtype, "auto|float32|bfloat16 (activations are f32 today)");
  flags.add_int("threads", &f.threads, "compute threads; 0 = all cores");
  add_kernel_calibration_flag(flags, &f.kernel_calibration);
  flags.add_int("max-pending-requests", &f.max_pending_requests,
                "in-flight requests beyond which new ones get 503; 0 = unlimited");
  flags.add_string("max-request-body", &f.max_request_body, "largest request body (413 above)");
  flags.add_int("shutdown-timeout", &f.shutdown_timeout,
                "seconds in-flight requests get to finish after SIGINT/SIGTERM");
  flags.add_bool("disable-log-stats", &f.disable_log_stats,
                 "no periodic throughput line in the log");
  flags.add_bool("enable-auto-tool-choice", &f.agents.enable_auto_tool_choice,
                 "tool_choice \"auto\": parse tool calls out of the output (needs "
                 "--tool-call-parser)");
  flags.add_string("tool-call-parser", &f.agents.tool_call_parser,
                   "tool-call format of the model: hermes, llama3_json, mistral, pythonic, "
                   "qwen3_xml");
  flags.add_string("reasoning-parser", &f.agents.reasoning_parser,
                   "split reasoning into message.reasoning: deepseek_r1, qwen3");
  flags.add_string("structured-outputs-config", &f.agents.structured_outputs_config,
                   "JSON: backend, disable_any_whitespace, disable_additional_properties, "
                   "enable_in_reasoning, reasoning_parser");
  flags.add_bool("trust-request-chat-template", &f.agents.trust_request_chat_template,
                 "accept a chat_template field in requests");
}

int fail(const Status& status) {
  std::fprintf(stderr, "strata serve: %s\n", status.message().c_str());
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

// "4096", "32k", "2GiB": with binary_k, bare k/M/G are powers of 1024 (memory
// sizes); otherwise powers of 1000 (token counts, as vLLM's --max-model-len).
StatusOr<int64_t> parse_size(const std::string& flag, const std::string& text, bool binary_k) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    return invalid_argument("--" + flag + " expects a number, got '" + text + "'");
  }
  std::string suffix = text.substr(pos);
  double mult = 1;
  if (suffix.empty() || suffix == "B") {
  } else if (suffix == "KiB" || (binary_k && (suffix == "K" || suffix == "k"))) {
    mult = 1024.0;
  } else if (suffix == "MiB" || (binary_k && (suffix == "M" || suffix == "m"))) {
    mult = 1024.0 * 1024;
  } else if (suffix == "GiB" || (binary_k && (suffix == "G" || suffix == "g"))) {
    mult = 1024.0 * 1024 * 1024;
  } else if (suffix == "KB" || suffix == "k" || suffix == "K") {
    mult = 1e3;
  } else if (suffix == "MB" || suffix == "m" || suffix == "M") {
    mult = 1e6;
  } else if (suffix == "GB" || suffix == "g" || suffix == "G") {
    mult = 1e9;
  } else {
    return invalid_argument("--" + flag + ": unknown suffix '" + suffix + "' in '" + text + "'");
  }
  if (v < 0) return invalid_argument("--" + flag + " must not be negative");
  return static_cast<int64_t>(v * mult);
}

// vLLM's nargs="+" for --served-model-name: `--served-model-name a b` and
// `--served-model-name=a,b` both give aliases a and b.
std::vector<std::string> join_model_names(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    out.push_back(args[i]);
    if (args[i] != "--served-model-name") continue;
    std::string joined;
    while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      joined += (joined.empty() ? "" : ",") + args[++i];
    }
    out.push_back(joined);
  }
  return out;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// --kv-events-config: a publisher bound now (a taken port fails startup).
StatusOr<std::shared_ptr<events::KvEventPublisher>> kv_event_publisher(const ServeFlags& f) {
  if (f.kv_events_config.empty()) return std::shared_ptr<events::KvEventPublisher>();
  STRATA_ASSIGN_OR_RETURN(events::KvEventsConfig config,
                          server::parse_kv_events_config(f.kv_events_config));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<events::KvEventPublisher> publisher,
                          events::KvEventPublisher::create(config));  // logs what it did
  return std::shared_ptr<events::KvEventPublisher>(std::move(publisher));
}

void warn_ignored(const FlagSet& flags) {
  for (const char* name : kIgnoredValueFlags) {
    if (flags.was_set(name)) {
      STRATA_LOG(kWarning) << "--" << name << " has no effect in Strata";
    }
  }
  for (const char* name : kIgnoredBoolFlags) {
    if (flags.was_set(name)) {
      STRATA_LOG(kWarning) << "--" << name << " has no effect in Strata";
    }
  }
}

}  // namespace

namespace {

StatusOr<int64_t> resolve_max_model_len(const ServeFlags& f, const model::ModelConfig& config) {
  const int64_t model_max = config.max_position_embeddings;
  if (f.max_model_len == "auto" || f.max_model_len == "-1") return model_max;
  STRATA_ASSIGN_OR_RETURN(int64_t len, parse_size("max-model-len", f.max_model_len, false));
  if (len < 2) return invalid_argument("--max-model-len must be at least 2");
  if (model_max > 0 && len > model_max) {
    // vLLM refuses this unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: positions past
    // the trained ones give garbage (RoPE) or out-of-range reads (absolute).
    const std::string both = "--max-model-len " + std::to_string(len) +
                             " is greater than the model's max_position_embeddings " +
                             std::to_string(model_max);
    const char* allow = std::getenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN");
    if (allow == nullptr || std::string(allow) != "1") {
      return invalid_argument(both +
                              "; to serve past the trained positions anyway, set "
                              "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (outputs past position " +
                              std::to_string(model_max) + " may be meaningless)");
    }
    STRATA_LOG(kWarning) << both << "; serving it because VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
                         << "(outputs past position " << model_max << " may be meaningless)";
  }
  return len;
}

struct Loaded {
  int64_t max_model_len = 0;  // resolved against the config before the weights load
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  server::ChatAssets chat;
  server::SamplingDefaults defaults;
};

// "loading layers [########------------] 10/24" on stderr, redrawn in place.
void print_load_progress(int64_t done, int64_t total) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / std::max<int64_t>(1, total));
  std::fprintf(stderr, "\rloading layers [%s%s] %lld/%lld", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '-').c_str(), static_cast<long long>(done),
               static_cast<long long>(total));
  if (done == total) std::fputc('\n', stderr);
}

StatusOr<Loaded> load_everything(const ServeFlags& f) {
  Loaded l;
  auto start = std::chrono::steady_clock::now();
  STRATA_LOG(kInfo) << "loading " << f.model
                    << (f.model_path == f.model ? std::string() : " from " + f.model_path)
                    << " ...";
  STRATA_ASSIGN_OR_RETURN(model::ModelFiles files, model::open_model(f.model_path));
  STRATA_ASSIGN_OR_RETURN(l.max_model_len, resolve_max_model_len(f, files.config));
  STRATA_ASSIGN_OR_RETURN(l.tokenizer, engine::load_tokenizer(files));
  if (!l.tokenizer) return invalid_argument(f.model_path + " has no tokenizer; serve needs one");
  STRATA_ASSIGN_OR_RETURN(l.chat, server::load_chat_assets(files, *l.tokenizer, f.chat_template));
  STRATA_ASSIGN_OR_RETURN(l.defaults, server::load_sampling_defaults(files, f.generation_config));
  STRATA_ASSIGN_OR_RETURN(l.model, model::Model::load(std::move(files), print_load_progress));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  STRATA_LOG(kInfo) << "loaded " << l.model->num_parameters() << " parameters in " << s << " s";
  if (l.chat.chat_template) {
    STRATA_LOG(kInfo) << "chat template from " << l.chat.source;
  } else {
    STRATA_LOG(kWarning) << "no chat template: /v1/chat/completions will answer 400";
  }
  if (f.generation_config != "vllm" && l.model->files().generation.present) {
    STRATA_LOG(kInfo) << "Default sampling parameters have been overridden by the model's "
                         "Hugging Face generation config: temperature="
                      << l.defaults.temperature << " top_p=" << l.defaults.top_p
                      << " top_k=" << l.defaults.top_k
                      << " repetition_penalty=" << l.defaults.repetition_penalty;
  }
  return l;
}

StatusOr<offload::OffloadConfig> offload_config(const ServeFlags& f) {
  if (!f.kv_transfer_config.empty()) {
    if (f.kv_offloading_size_gib != 0) {
      return invalid_argument("give either --kv-transfer-config or --kv-offloading-size, not both");
    }
    return server::parse_kv_transfer_config(f.kv_transfer_config, f.block_size);
  }
  if (f.kv_offloading_size_gib == 0) return offload::OffloadConfig{};
  if (f.kv_offloading_backend != "native") {
    return invalid_argument("--kv-offloading-backend must be native, got '" +
                            f.kv_offloading_backend + "'");
  }
  return server::kv_offloading_size_config(f.kv_offloading_size_gib);
}

StatusOr<engine::EngineConfig> engine_config(const ServeFlags& f, const model::Model& model,
                                             int64_t max_model_len) {
  engine::EngineConfig c;
  STRATA_ASSIGN_OR_RETURN(c.kv_cache_dtype,
                          tensor::parse_kv_cache_dtype(f.kv_cache_dtype, model.weight_dtype()));
  c.scheduler.max_num_seqs = f.max_num_seqs;
  c.scheduler.max_num_batched_tokens =
      f.max_num_batched_tokens > 0
          ? f.max_num_batched_tokens
          : engine::auto_max_num_batched_tokens(model.prefill_flops_per_token(),
                                                model.decode_weight_bytes());
  c.scheduler.max_model_len = max_model_len;
  c.block_size = f.block_size;
  c.enable_prefix_caching = f.enable_prefix_caching;
  if (!f.kv_cache_memory.empty()) {
    STRATA_ASSIGN_OR_RETURN(c.kv_cache_memory_bytes,
                            parse_size("kv-cache-memory", f.kv_cache_memory, true));
  } else {
    STRATA_ASSIGN_OR_RETURN(int64_t budget, parse_size("cpu-kv-budget", f.cpu_kv_budget, true));
    if (f.gpu_memory_utilization <= 0 || f.gpu_memory_utilization > 1) {
      return invalid_argument("--gpu-memory-utilization must be in (0, 1]");
    }
    c.kv_cache_memory_bytes = static_cast<int64_t>(budget * f.gpu_memory_utilization);
  }
  STRATA_ASSIGN_OR_RETURN(c.offload, offload_config(f));
  STRATA_ASSIGN_OR_RETURN(c.kv_events, kv_event_publisher(f));
  if (!f.speculative_config.empty()) {
    STRATA_ASSIGN_OR_RETURN(c.speculative, server::parse_speculative_config(f.speculative_config));
  }
  return c;
}


std::vector<std::string> api_keys(const ServeFlags& f) {
  std::vector<std::string> keys;
  if (!f.api_key.empty()) keys.push_back(f.api_key);
  for (const char* env : {"VLLM_API_KEY", "STRATA_API_KEY"}) {
    const char* v = std::getenv(env);
    if (v != nullptr && *v != '\0') keys.emplace_back(v);
  }
  return keys;
}

std::vector<int32_t> eos_ids(const model::Model& model, const tokenizer::Tokenizer& tok) {
  std::vector<int64_t> eos = model.files().generation.eos_token_ids;
  if (eos.empty()) eos = model.config().eos_token_ids;
  std::vector<int32_t> out(eos.begin(), eos.end());
  if (out.empty() && tok.eos_token_id() >= 0) out.push_back(tok.eos_token_id());
  return out;
}

server::ServerConfig server_config(const ServeFlags& f, const Loaded& l, int64_t max_model_len) {
  server::ServerConfig c;
  c.served_model_names = split_commas(f.served_model_name);
  if (c.served_model_names.empty()) c.served_model_names.push_back(f.model);
  c.model_root = f.model;  // as vLLM: the MODEL argument (an id stays an id)
  c.max_model_len = max_model_len;
  c.api_keys = api_keys(f);
  c.max_pending_requests = f.max_pending_requests;
  c.defaults = l.defaults;
  c.eos_token_ids = eos_ids(*l.model, *l.tokenizer);
  c.seed = static_cast<uint64_t>(f.seed);
  c.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  c.version = STRATA_VERSION;
  c.shutdown_grace_s = static_cast<int>(f.shutdown_timeout);
  c.log_stats_interval_s = f.disable_log_stats ? 0 : 5;
  c.kv_transfer_config_json = f.kv_transfer_config;
  c.kv_events_config_json = f.kv_events_config;
  return c;
}

Status check_flags(const ServeFlags& f) {
  if (f.dtype != "auto" && f.dtype != "float32" && f.dtype != "float" && f.dtype != "bfloat16") {
    if (f.dtype == "half" || f.dtype == "float16") {
      STRATA_LOG(kWarning) << "--dtype " << f.dtype << ": activations run in float32";
    } else {
      return invalid_argument("--dtype must be auto, float32 or bfloat16, got '" + f.dtype + "'");
    }
  }
  if (f.port < 0 || f.port > 65535) return invalid_argument("--port must be in [0, 65535]");
  if (f.max_num_batched_tokens < 0) {
    return invalid_argument("--max-num-batched-tokens must be positive, or 0 for the automatic choice; got " +
                            std::to_string(f.max_num_batched_tokens));
  }
  if (auto mode = ops::parse_calibration_mode(f.kernel_calibration); !mode.ok()) {
    return mode.status();
  }
  if (!f.speculative_config.empty()) {  // before the model loads: a typo fails at once
    STRATA_RETURN_IF_ERROR(server::parse_speculative_config(f.speculative_config).status());
  }
  return Status();
}

// The draft model of {"method": "draft_model"}, loaded the way the target
// is (a directory, a .gguf or a cached Hugging Face id); null for other methods.
StatusOr<std::unique_ptr<model::Model>> load_draft_model(const ServeFlags& f,
                                                         engine::EngineConfig& config) {
  if (config.speculative.method != spec_decode::SpeculativeMethod::kDraftModel) {
    return std::unique_ptr<model::Model>();
  }
  const std::string& name = config.speculative.model;
  STRATA_ASSIGN_OR_RETURN(std::string path, locate_model(name, "", f.download_dir));
  STRATA_LOG(kInfo) << "loading draft model " << name << (path == name ? "" : " from " + path)
                    << " ...";
  STRATA_ASSIGN_OR_RETURN(model::ModelFiles files, model::open_model(path));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> draft,
                          model::Model::load(std::move(files), print_load_progress));
  STRATA_LOG(kInfo) << "draft model: " << draft->num_parameters() << " parameters, vocabulary "
                    << draft->vocab_size() << ", " << config.speculative.num_speculative_tokens
                    << " drafts per step";
  config.draft_model = draft.get();
  return draft;
}

int serve(const ServeFlags& f) {
  if (Status s = check_flags(f); !s.ok()) return fail(s);
  StatusOr<Loaded> loaded = load_everything(f);
  if (!loaded.ok()) return fail(loaded.status());
  const int64_t max_len = loaded->max_model_len;
  StatusOr<engine::EngineConfig> config = engine_config(f, *loaded->model, max_len);
  if (!config.ok()) return fail(config.status());
  STRATA_LOG(kInfo) << "max_num_batched_tokens=" << config->scheduler.max_num_batched_tokens
                    << (f.max_num_batched_tokens > 0 ? "" : " (auto)") << ", "
                    << loaded->model->prefill_flops_per_token() / 1e9
                    << " GFLOP per prompt token, "
                    << loaded->model->decode_weight_bytes() / 1e6 << " MB of weights per step";
  StatusOr<std::unique_ptr<model::Model>> draft = load_draft_model(f, *config);
  if (!draft.ok()) return fail(draft.status());
  StatusOr<int64_t> body_limit = parse_size("max-request-body", f.max_request_body, true);
  if (!body_limit.ok()) return fail(body_limit.status());
  {
    // Timed on a pool of the engine's size, before the engine's threads start.
    ThreadPool pool(f.threads > 0 ? static_cast<int>(f.threads) : num_hardware_threads());
    StatusOr<std::vector<std::string>> calibration = calibrate_kernels(f.kernel_calibration, pool);
    if (!calibration.ok()) return fail(calibration.status());
    for (const std::string& line : *calibration) STRATA_LOG(kInfo) << line;
  }
  StatusOr<std::unique_ptr<engine::Engine>> engine =
      engine::Engine::create(*loaded->model, *config, static_cast<int>(f.threads));
  if (!engine.ok()) return fail(engine.status());
  const tensor::KvCacheDtype kv_dtype = config->kv_cache_dtype;
  STRATA_LOG(kInfo) << "KV cache: " << (*engine)->num_kv_blocks() << " blocks of "
                    << config->block_size << " tokens ("
                    << (*engine)->num_kv_blocks() * config->block_size << " tokens), "
                    << tensor::kv_cache_dtype_name(kv_dtype) << ", "
                    << loaded->model->kv_bytes_per_block(1, kv_dtype) << " bytes per token"
                    << (tensor::kv_cache_dtype_has_scales(kv_dtype)
                            ? (loaded->model->has_kv_scales() ? "; fp8 scales from the checkpoint"
                                                              : "; fp8 scales per token and head")
                            : "");
  if ((*engine)->num_draft_kv_blocks() > 0) {
    STRATA_LOG(kInfo) << "draft KV cache: " << (*engine)->num_draft_kv_blocks() << " blocks, "
                      << (*draft)->kv_bytes_per_block(1, kv_dtype) << " bytes per token";
  }

  server::ServerContext ctx;
  ctx.engine = engine->get();
  ctx.tokenizer = loaded->tokenizer.get();
  ctx.chat_template = loaded->chat.chat_template;
  ctx.bos_token = loaded->chat.bos_token;
  ctx.eos_token = loaded->chat.eos_token;
  ctx.config = server_config(f, *loaded, max_len);
  ctx.rng.seed(ctx.config.seed);
  if (Status s = server::configure_agents(f.agents, *loaded->tokenizer, ctx.config.eos_token_ids,
                                          &ctx);
      !s.ok()) {
    return fail(s);
  }
  ctx.metrics = std::make_unique<server::Metrics>(
      ctx.config.served_model_names.front(), max_len,
      server::CacheConfigInfo{config->block_size, (*engine)->num_kv_blocks(),
                              config->enable_prefix_caching, f.gpu_memory_utilization,
                              f.kv_cache_dtype, tensor::kv_cache_dtype_name(kv_dtype)});
  server::HttpServerOptions http{f.host, static_cast<int>(f.port), *body_limit, 120};
  StatusOr<std::unique_ptr<server::ApiServer>> api =
      server::ApiServer::create(std::move(ctx), http);
  if (!api.ok()) return fail(api.status());
  // Tests and scripts wait for this line (or poll /health).
  STRATA_LOG(kInfo) << "serving " << f.model << " on http://" << f.host << ":" << (*api)->port();
  (*api)->run();
  engine->reset();  // its last callbacks post to the server's I/O context
  api->reset();
  STRATA_LOG(kInfo) << "stopped";
  return 0;
}

}  // namespace

int run_serve(const std::vector<std::string>& args) {
  ServeFlags f;
  FlagSet flags("serve");
  register_flags(flags, f);
  std::map<std::string, std::string> ignored_values;
  std::map<std::string, bool> ignored_bools;
  for (const char* name : kIgnoredValueFlags) {
    flags.add_string(name, &ignored_values[name], "(vLLM flag; no effect)");
  }
  for (const char* name : kIgnoredBoolFlags) {
    flags.add_bool(name, &ignored_bools[name], "(vLLM flag; no effect)");
  }
  if (Status s = flags.parse(join_model_names(args)); !s.ok()) return fail(s);
  if (flags.help_requested()) {
    std::fputs(flags.usage().c_str(), stdout);
    return 0;
  }
  warn_ignored(flags);
  // Parser names and --structured-outputs-config fail before the model loads.
  if (Status s = server::check_agent_flags(f.agents); !s.ok()) return fail(s);
  if (flags.positional().size() > 1) {
    return fail(invalid_argument("expected one MODEL argument, got " +
                                 std::to_string(flags.positional().size())));
  }
  if (!flags.positional().empty()) f.model = flags.positional()[0];
  if (f.model.empty()) f.model = default_model_path();
  if (f.model.empty()) {
    return fail(invalid_argument("no MODEL given and no bundled model (" +
                                 default_model_search_note() + ")"));
  }
  StatusOr<std::string> path = locate_model(f.model, f.revision, f.download_dir);
  if (!path.ok()) return fail(path.status());
  f.model_path = *path;
  return serve(f);
}

}  // namespace strata::app
