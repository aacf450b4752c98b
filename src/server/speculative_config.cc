#include "server/speculative_config.h"

#include "config/json_fields.h"

namespace strata::server {
namespace {

using config::FieldStyle;
using config::JsonFields;
using spec_decode::SpeculativeConfig;
using spec_decode::SpeculativeMethod;

// The method named by "method", or inferred from "model" as vLLM does.
StatusOr<std::string> method_of(const JsonFields& f, const std::string& model) {
  std::string method;
  STRATA_RETURN_IF_ERROR(f.optional_string_or_null("method", &method));
  if (!method.empty()) return method == "[ngram]" ? std::string("ngram") : method;
  if (model == "ngram" || model == "[ngram]") return std::string("ngram");
  if (!model.empty()) return std::string("draft_model");
  return f.missing_error("method", "\"ngram\"");
}

Status refuse(const std::string& method) {
  if (method == "eagle3" || method == "eagle") {
    return invalid_argument("method \"" + method +
                            "\" needs an EAGLE draft head, which Strata cannot load yet (no "
                            "head loader; see docs/architecture.md, speculative decoding); use "
                            "{\"method\": \"ngram\", \"num_speculative_tokens\": 4} or "
                            "{\"method\": \"draft_model\", \"model\": \"PATH\", "
                            "\"num_speculative_tokens\": 4}");
  }
  return invalid_argument("method \"" + method +
                          "\" is not supported (supported: \"ngram\", \"draft_model\"; "
                          "refused: \"eagle3\")");
}

// A draft model: drafts come from its greedy continuation; n-gram keys
// would have no effect, so they are refused.
Status parse_draft_model(const JsonFields& f, const std::string& model, SpeculativeConfig& c) {
  if (model.empty() || model == "ngram" || model == "[ngram]") {
    return invalid_argument(f.name("model") +
                            " is required with method \"draft_model\": the path (Hugging Face "
                            "directory or .gguf) of a smaller model with the target's vocabulary" +
                            (model.empty() ? std::string() : " (got \"" + model + "\")"));
  }
  for (const char* key : {"prompt_lookup_max", "prompt_lookup_min"}) {
    if (f.has(key) && !f.is_null(key)) {
      return invalid_argument(f.name(key) +
                              " applies to method \"ngram\" only, not \"draft_model\"");
    }
  }
  c.method = SpeculativeMethod::kDraftModel;
  c.model = model;
  return Status();
}

Status parse_ngram(const JsonFields& f, const std::string& model, SpeculativeConfig& c) {
  if (!model.empty() && model != "ngram" && model != "[ngram]") {
    return invalid_argument(f.name("model") + " must not be set with method \"ngram\" (got \"" +
                            model + "\"): n-gram drafts come from the prompt, not a model");
  }
  const bool has_max = f.has("prompt_lookup_max") && !f.is_null("prompt_lookup_max");
  const bool has_min = f.has("prompt_lookup_min") && !f.is_null("prompt_lookup_min");
  if (has_max) STRATA_RETURN_IF_ERROR(f.optional_int("prompt_lookup_max", &c.prompt_lookup_max, 1));
  if (has_min) STRATA_RETURN_IF_ERROR(f.optional_int("prompt_lookup_min", &c.prompt_lookup_min, 1));
  if (has_max && !has_min) c.prompt_lookup_min = c.prompt_lookup_max;
  if (has_min && !has_max) c.prompt_lookup_max = c.prompt_lookup_min;
  if (c.prompt_lookup_min > c.prompt_lookup_max) {
    return invalid_argument(f.name("prompt_lookup_min") + " (" +
                            std::to_string(c.prompt_lookup_min) + ") must be <= " +
                            f.name("prompt_lookup_max") + " (" +
                            std::to_string(c.prompt_lookup_max) + ")");
  }
  c.method = SpeculativeMethod::kNgram;
  return Status();
}

Status parse_object(const JsonFields& f, SpeculativeConfig& c) {
  STRATA_RETURN_IF_ERROR(f.check_keys({"method", "num_speculative_tokens", "prompt_lookup_max",
                                       "prompt_lookup_min", "model", "draft_tensor_parallel_size",
                                       "disable_by_batch_size"}));
  std::string model;
  STRATA_RETURN_IF_ERROR(f.optional_string_or_null("model", &model));
  StatusOr<std::string> method = method_of(f, model);
  if (!method.ok()) return method.status();
  if (!f.has("num_speculative_tokens") || f.is_null("num_speculative_tokens")) {
    return f.missing_error("num_speculative_tokens", "an integer >= 1");
  }
  STRATA_RETURN_IF_ERROR(f.required_int("num_speculative_tokens", &c.num_speculative_tokens, 1));
  int64_t draft_tp = 1;
  if (!f.is_null("draft_tensor_parallel_size")) {
    STRATA_RETURN_IF_ERROR(f.optional_int("draft_tensor_parallel_size", &draft_tp, 1));
  }
  if (draft_tp != 1) {
    return invalid_argument(f.name("draft_tensor_parallel_size") + " must be 1, got " +
                            std::to_string(draft_tp) + " (no tensor parallelism here)");
  }
  if (!f.is_null("disable_by_batch_size")) {
    STRATA_RETURN_IF_ERROR(f.optional_int("disable_by_batch_size", &c.disable_by_batch_size, 2));
  }
  if (*method == "ngram") return parse_ngram(f, model, c);
  if (*method == "draft_model") return parse_draft_model(f, model, c);
  return refuse(*method);
}

}  // namespace

StatusOr<SpeculativeConfig> parse_speculative_config(const std::string& json) {
  const config::Json j = config::Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return invalid_argument("--speculative-config expects a JSON object, got '" + json + "'");
  }
  SpeculativeConfig config;
  Status s = parse_object(JsonFields(j, "", FieldStyle::kFlag), config);
  if (!s.ok()) return s.with_prefix("--speculative-config");
  return config;
}

}  // namespace strata::server
