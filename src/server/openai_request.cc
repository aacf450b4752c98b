#include "server/openai_request.h"

#include <algorithm>
#include <charconv>

#include "server/request_json.h"

namespace strata::server {
namespace {

ApiError range_error(std::string_view name, const std::string& what) {
  return ApiError::bad_request(std::string(name) + " " + what, std::string(name));
}

void check_range(FieldReader& f, std::string_view name, const std::optional<double>& v, double lo,
                 double hi, const char* what) {
  if (v && (*v < lo || *v > hi)) f.fail(range_error(name, what));
}

void read_logit_bias(FieldReader& f, SamplingFields& s) {
  auto obj = f.object("logit_bias");
  if (!obj) return;
  for (simdjson::dom::key_value_pair kv : *obj) {
    int32_t id = -1;
    auto [ptr, ec] = std::from_chars(kv.key.data(), kv.key.data() + kv.key.size(), id);
    double bias = 0;
    if (ec != std::errc() || ptr != kv.key.data() + kv.key.size() || id < 0 ||
        kv.value.get_double().get(bias) != simdjson::SUCCESS) {
      f.fail(
          ApiError::bad_request("logit_bias must map token ids (as strings) to numbers; got key '" +
                                    std::string(kv.key) + "'",
                                "logit_bias"));
      return;
    }
    s.logit_bias.emplace_back(id, static_cast<float>(std::clamp(bias, -100.0, 100.0)));
  }
}

void read_stream_options(FieldReader& f, SamplingFields& s) {
  auto opts = f.object("stream_options");
  if (!opts) return;
  if (!s.stream) {
    f.fail(ApiError::bad_request("Stream options can only be defined when `stream=True`.",
                                 "stream_options"));
    return;
  }
  FieldReader o(*opts);
  s.include_usage = o.boolean("include_usage").value_or(false);
  s.continuous_usage_stats = o.boolean("continuous_usage_stats").value_or(false);
  if (!o.ok()) f.fail(*o.error());
}

// kv_transfer_params (vLLM): where a router or P/D proxy says this prompt's KV
// is ({remote_host, remote_port}, also nested as remote_prefiller or
// remote_kv_source) and per-request load/offload caps. Other connector keys
// are accepted and ignored, as vLLM's connectors do.
void read_kv_source(FieldReader& f, engine::KvTransferHints& k) {
  if (auto host = f.string("remote_host")) k.remote_host = *host;
  if (auto port = f.integer("remote_port")) k.remote_port = *port;
}

void read_kv_transfer_params(FieldReader& f, SamplingFields& s) {
  auto params = f.object("kv_transfer_params");
  if (!params) return;
  FieldReader p(*params);
  engine::KvTransferHints& k = s.kv_transfer;
  read_kv_source(p, k);
  for (const char* nested : {"remote_prefiller", "remote_kv_source"}) {
    if (auto o = p.object(nested)) {
      FieldReader n(*o);
      read_kv_source(n, k);
      if (!n.ok()) p.fail(*n.error());
    }
  }
  k.max_load_tokens = p.integer("max_load_tokens").value_or(-1);
  k.max_offload_tokens = p.integer("max_offload_tokens").value_or(-1);
  k.do_remote_decode = p.boolean("do_remote_decode").value_or(false);
  if (!p.ok()) {
    f.fail(*p.error());
    return;
  }
  if (k.remote_port < 0 || k.remote_port > 65535) {
    f.fail(range_error("kv_transfer_params.remote_port", "must be in [0, 65535]"));
  }
  if (k.max_load_tokens < -1 || k.max_offload_tokens < -1) {
    f.fail(range_error("kv_transfer_params", "max_load_tokens / max_offload_tokens must be >= 0"));
  }
}

void read_core_sampling(FieldReader& f, SamplingFields& s) {
  s.temperature = f.number("temperature");
  s.top_p = f.number("top_p");
  s.min_p = f.number("min_p");
  s.presence_penalty = f.number("presence_penalty");
  s.frequency_penalty = f.number("frequency_penalty");
  s.repetition_penalty = f.number("repetition_penalty");
  s.top_k = f.integer("top_k");
  s.seed = f.integer("seed");
  s.min_tokens = f.integer("min_tokens");
  s.prompt_logprobs = f.integer("prompt_logprobs");
  s.n = static_cast<int>(std::clamp<int64_t>(f.integer("n").value_or(1), -1, Limits::kMaxN + 1));
  s.stop = f.string_or_list("stop").value_or(std::vector<std::string>{});
  s.stop_token_ids = f.int_list("stop_token_ids").value_or(std::vector<int32_t>{});
  s.ignore_eos = f.boolean("ignore_eos").value_or(false);
  s.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  s.spaces_between_special_tokens = f.boolean("spaces_between_special_tokens").value_or(true);
  s.include_stop_str_in_output = f.boolean("include_stop_str_in_output").value_or(false);
  s.return_token_ids = f.boolean("return_token_ids").value_or(false);
  s.cache_salt = f.string("cache_salt").value_or("");
  read_kv_transfer_params(f, s);
  s.stream = f.boolean("stream").value_or(false);
}

void validate_sampling(FieldReader& f, const SamplingFields& s) {
  check_range(f, "temperature", s.temperature, 0.0, 1e9, "must be non-negative");
  if (s.top_p && (*s.top_p <= 0.0 || *s.top_p > 1.0)) {
    f.fail(range_error("top_p", "must be in (0, 1], got " + std::to_string(*s.top_p)));
  }
  check_range(f, "min_p", s.min_p, 0.0, 1.0, "must be in [0, 1]");
  check_range(f, "presence_penalty", s.presence_penalty, -2.0, 2.0, "must be in [-2, 2]");
  check_range(f, "frequency_penalty", s.frequency_penalty, -2.0, 2.0, "must be in [-2, 2]");
  if (s.repetition_penalty && *s.repetition_penalty <= 0.0) {
    f.fail(range_error("repetition_penalty", "must be greater than zero"));
  }
  if (s.top_k && *s.top_k < -1) {
    f.fail(range_error("top_k", "must be 0 or -1 (disable), or at least 1"));
  }
  if (s.n < 1 || s.n > Limits::kMaxN) {
    f.fail(range_error("n", "must be between 1 and " + std::to_string(Limits::kMaxN)));
  }
  if (s.max_tokens && *s.max_tokens < 1) {
    f.fail(range_error("max_tokens", "must be at least 1, got " + std::to_string(*s.max_tokens)));
  }
  if (s.min_tokens && *s.min_tokens < 0) {
    f.fail(range_error("min_tokens", "must be greater than or equal to 0"));
  }
  if (s.min_tokens && s.max_tokens && *s.min_tokens > *s.max_tokens) {
    f.fail(range_error(
        "min_tokens", "must be less than or equal to max_tokens=" + std::to_string(*s.max_tokens)));
  }
  if (s.stop.size() > Limits::kMaxStopStrings) {
    f.fail(range_error("stop", "may hold at most " + std::to_string(Limits::kMaxStopStrings) +
                                   " strings, got " + std::to_string(s.stop.size())));
  }
  for (const std::string& stop : s.stop) {
    if (stop.size() > Limits::kMaxStopStringBytes) {
      f.fail(range_error("stop", "strings may be at most " +
                                     std::to_string(Limits::kMaxStopStringBytes) +
                                     " bytes, got one of " + std::to_string(stop.size())));
      break;
    }
  }
  if (s.stop_token_ids.size() > Limits::kMaxStopTokenIds) {
    f.fail(range_error("stop_token_ids",
                       "may hold at most " + std::to_string(Limits::kMaxStopTokenIds) +
                           " ids, got " + std::to_string(s.stop_token_ids.size())));
  }
  if (s.logit_bias.size() > Limits::kMaxLogitBias) {
    f.fail(range_error("logit_bias", "may hold at most " + std::to_string(Limits::kMaxLogitBias) +
                                         " entries, got " + std::to_string(s.logit_bias.size())));
  }
  if (s.prompt_logprobs && (*s.prompt_logprobs < -1 || *s.prompt_logprobs > Limits::kMaxLogprobs)) {
    f.fail(range_error("prompt_logprobs",
                       "must be in [0, " + std::to_string(Limits::kMaxLogprobs) + "]"));
  }
}

ApiError unsupported(const std::string& what, const std::string& param) {
  return ApiError::bad_request(what + " is not supported by this server yet", param);
}

// Known fields whose meaning Strata cannot honour yet are refused rather than
// silently ignored (a client relying on them would get wrong output).
void reject_unsupported(FieldReader& f) {
  if (f.integer("best_of").value_or(1) > 1) f.fail(unsupported("best_of > 1", "best_of"));
  if (f.boolean("use_beam_search").value_or(false)) {
    f.fail(unsupported("beam search", "use_beam_search"));
  }
}

using Kind = StructuredOutputRequest::Kind;

// A JSON schema given as an object (or, leniently, as its JSON text).
std::optional<std::string> schema_text(FieldReader& f, std::string_view name) {
  auto e = f.element(name);
  if (!e) return std::nullopt;
  std::string_view text;
  if (e->get_string().get(text) == simdjson::SUCCESS) return std::string(text);
  if (e->is_object()) return to_ordered_json(*e).dump();
  f.fail(ApiError::bad_request("'" + std::string(name) + "' must be a JSON schema object, got " +
                                   json_type_phrase(*e),
                               std::string(name)));
  return std::nullopt;
}

void set_constraint(FieldReader& f, StructuredOutputRequest& out, StructuredOutputRequest c) {
  if (out.kind != Kind::kNone) {
    f.fail(ApiError::bad_request("only one kind of structured outputs constraint may be given; "
                                 "got '" + out.param + "' and '" + c.param + "'",
                                 c.param));
    return;
  }
  out = std::move(c);
}

// vLLM's structured_outputs {json, regex, choice, grammar, json_object} (or the
// older top-level guided_* fields, with `prefix` "guided_").
void read_constraint_fields(FieldReader& f, const std::string& prefix, const std::string& where,
                            StructuredOutputRequest& out) {
  if (auto json = schema_text(f, prefix + "json")) {
    set_constraint(f, out, {Kind::kJsonSchema, *json, {}, false, where + prefix + "json"});
  }
  if (auto regex = f.string(prefix + "regex")) {
    set_constraint(f, out, {Kind::kRegex, *regex, {}, false, where + prefix + "regex"});
  }
  if (auto choice = f.string_or_list(prefix + "choice")) {
    if (choice->empty()) {
      f.fail(ApiError::bad_request("'" + prefix + "choice' must not be empty", prefix + "choice"));
    }
    set_constraint(f, out, {Kind::kChoice, "", *choice, false, where + prefix + "choice"});
  }
  if (auto grammar = f.string(prefix + "grammar")) {
    set_constraint(f, out, {Kind::kGrammar, *grammar, {}, false, where + prefix + "grammar"});
  }
  if (f.boolean(prefix + "json_object").value_or(false)) {
    set_constraint(f, out, {Kind::kJsonObject, "", {}, false, where + prefix + "json_object"});
  }
}

void read_response_format(FieldReader& f, StructuredOutputRequest& out) {
  auto rf = f.object("response_format");
  if (!rf) return;
  FieldReader r(*rf);
  const std::string type = r.string("type").value_or("text");
  if (type == "json_object") {
    set_constraint(f, out, {Kind::kJsonObject, "", {}, false, "response_format"});
  } else if (type == "json_schema") {
    auto js = r.object("json_schema");
    if (!js) {
      if (r.ok()) {
        f.fail(ApiError::bad_request(
            "response_format of type 'json_schema' requires a 'json_schema' object",
            "response_format"));
      }
    } else {
      FieldReader j(*js);
      std::optional<std::string> schema = schema_text(j, "schema");
      const bool strict = j.boolean("strict").value_or(false);
      if (!j.ok()) {
        f.fail(*j.error());
      } else {
        // No schema: any JSON object, as OpenAI and vLLM accept.
        set_constraint(f, out,
                       {schema ? Kind::kJsonSchema : Kind::kJsonObject, schema.value_or(""), {},
                        strict, "response_format"});
      }
    }
  } else if (type == "structural_tag") {
    f.fail(unsupported("response_format type 'structural_tag'", "response_format"));
  } else if (type != "text") {
    f.fail(ApiError::bad_request("response_format type must be 'text', 'json_object' or "
                                 "'json_schema', got '" + type + "'",
                                 "response_format"));
  }
  if (!r.ok()) f.fail(*r.error());
}

void read_structured_outputs(FieldReader& f, SamplingFields& s) {
  read_response_format(f, s.structured);
  if (auto so = f.object("structured_outputs")) {
    FieldReader o(*so);
    read_constraint_fields(o, "", "structured_outputs.", s.structured);
    if (o.has("structural_tag")) {
      o.fail(unsupported("structured_outputs.structural_tag", "structured_outputs"));
    }
    if (!o.ok()) f.fail(*o.error());
  }
  read_constraint_fields(f, "guided_", "", s.structured);
}

void read_token_filters(FieldReader& f, SamplingFields& s) {
  if (auto ids = f.int_list("allowed_token_ids")) {
    if (ids->empty()) f.fail(range_error("allowed_token_ids", "must not be empty"));
    if (ids->size() > Limits::kMaxAllowedTokenIds) {
      f.fail(
          range_error("allowed_token_ids",
                      "may hold at most " + std::to_string(Limits::kMaxAllowedTokenIds) + " ids"));
    }
    s.allowed_token_ids = std::move(*ids);
  }
  if (auto words = f.string_or_list("bad_words")) {
    if (words->size() > Limits::kMaxBadWords) {
      f.fail(range_error("bad_words", "may hold at most " + std::to_string(Limits::kMaxBadWords) +
                                          " strings, got " + std::to_string(words->size())));
    }
    for (const std::string& w : *words) {
      if (w.size() > Limits::kMaxStopStringBytes) {
        f.fail(range_error(
            "bad_words",
            "strings may be at most " + std::to_string(Limits::kMaxStopStringBytes) + " bytes"));
        break;
      }
    }
    s.bad_words = std::move(*words);
  }
}

void read_tool_choice(FieldReader& f, ChatRequest& r) {
  r.parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
  auto e = f.element("tool_choice");
  if (!e) return;
  r.tool_choice.given = true;
  std::string_view v;
  if (e->get_string().get(v) == simdjson::SUCCESS) {
    if (v == "none") {
      r.tool_choice.mode = ToolChoice::Mode::kNone;
    } else if (v == "auto") {
      r.tool_choice.mode = ToolChoice::Mode::kAuto;
    } else if (v == "required") {
      r.tool_choice.mode = ToolChoice::Mode::kRequired;
    } else {
      f.fail(ApiError::bad_request("tool_choice must be 'none', 'auto', 'required' or "
                                   "{\"type\": \"function\", \"function\": {\"name\": ...}}, got '" +
                                       std::string(v) + "'",
                                   "tool_choice"));
    }
    return;
  }
  simdjson::dom::object obj;
  std::string_view name;
  if (e->get_object().get(obj) == simdjson::SUCCESS &&
      obj.at_pointer("/function/name").get_string().get(name) == simdjson::SUCCESS) {
    r.tool_choice.mode = ToolChoice::Mode::kNamed;
    r.tool_choice.name = std::string(name);
    return;
  }
  f.fail(ApiError::bad_request(
      "tool_choice must be 'none', 'auto', 'required' or {\"type\": \"function\", "
      "\"function\": {\"name\": ...}}",
      "tool_choice"));
}

// Reads the fields both endpoints share; `max_tokens` handled by the caller.
void read_sampling(FieldReader& f, SamplingFields& s) {
  reject_unsupported(f);
  s.truncate_prompt_tokens = f.integer("truncate_prompt_tokens");
  if (s.truncate_prompt_tokens && *s.truncate_prompt_tokens < -1) {
    f.fail(range_error("truncate_prompt_tokens", "must be -1 or at least 1"));
  }
  read_core_sampling(f, s);
  read_logit_bias(f, s);
  read_stream_options(f, s);
  read_structured_outputs(f, s);
  read_token_filters(f, s);
}

ApiError prompt_error() {
  return ApiError::bad_request(
      "'prompt' must be a string, a list of strings, a list of token ids, or a list of lists "
      "of token ids",
      "prompt");
}

std::optional<ApiError> read_prompts(simdjson::dom::element e, std::vector<PromptInput>* out) {
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) {
    out->push_back({true, std::string(s), {}});
    return std::nullopt;
  }
  simdjson::dom::array arr;
  if (e.get_array().get(arr) != simdjson::SUCCESS) return prompt_error();
  if (arr.size() == 0) return ApiError::bad_request("'prompt' must not be empty", "prompt");
  PromptInput ids{false, "", {}};
  if (read_token_ids(e, &ids.token_ids)) {
    out->push_back(std::move(ids));
    return std::nullopt;
  }
  for (simdjson::dom::element item : arr) {
    if (item.get_string().get(s) == simdjson::SUCCESS) {
      out->push_back({true, std::string(s), {}});
    } else if (read_token_ids(item, &ids.token_ids)) {
      out->push_back(ids);
    } else {
      return prompt_error();
    }
  }
  return std::nullopt;
}

using chat_template::Dict;
using chat_template::Value;
using chat_template::ValueList;

// Joins text parts as vLLM's "string" content format does (a null or absent
// content becomes ""); other parts are not supported by a text-only model.
std::optional<ApiError> normalize_content(Dict& message) {
  const Value* content = message.find("content");
  if (content == nullptr || content->is_none()) {
    message.set("content", Value::string(""));
    return std::nullopt;
  }
  if (!content->is_list()) return std::nullopt;
  std::string text;
  for (const Value& part : content->as_list()) {
    const Value* type = part.is_dict() ? part.as_dict().find("type") : nullptr;
    const Value* part_text = part.is_dict() ? part.as_dict().find("text") : nullptr;
    if (type == nullptr || !type->is_string() || type->as_string() != "text" ||
        part_text == nullptr || !part_text->is_string()) {
      return ApiError::bad_request(
          "only text content parts ({\"type\":\"text\",\"text\":...}) "
          "are supported",
          "messages");
    }
    if (!text.empty()) text += "\n";
    text += part_text->as_string();
  }
  message.set("content", Value::string(std::move(text)));
  return std::nullopt;
}

Dict without_key(const Dict& d, std::string_view key) {
  Dict out;
  for (const auto& [k, v] : d.entries()) {
    if (k != key) out.set(k, v);
  }
  return out;
}

// A tool call's arguments as templates expect them: an object, parsed from
// the OpenAI format's JSON string; none (or "", as a client reassembling an
// empty stream gives) is {}, as in vLLM. Other types are kept.
std::optional<ApiError> parse_arguments(Dict& function) {
  const Value* args = function.find("arguments");
  if (args == nullptr || args->is_none() || (args->is_string() && args->as_string().empty())) {
    function.set("arguments", Value::dict({}));
    return std::nullopt;
  }
  if (!args->is_string()) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(args->as_string()).get(doc) != simdjson::SUCCESS) {
    return ApiError::bad_request(
        "tool call arguments must be a JSON string, got " + args->as_string().substr(0, 64),
        "messages");
  }
  function.set("arguments", to_template_value(doc));
  return std::nullopt;
}

// An assistant turn's tool calls carry their arguments as a JSON string (the
// OpenAI format); chat templates expect an object, so, as vLLM does, the
// string is parsed before rendering.
std::optional<ApiError> normalize_tool_calls(Dict& message) {
  const Value* calls = message.find("tool_calls");
  if (calls == nullptr) return std::nullopt;
  if (calls->is_none()) {
    message = without_key(message, "tool_calls");
    return std::nullopt;
  }
  if (!calls->is_list()) return ApiError::bad_request("'tool_calls' must be a list", "messages");
  ValueList normalized;
  for (const Value& call : calls->as_list()) {
    if (!call.is_dict()) {
      return ApiError::bad_request("each tool call must be an object", "messages");
    }
    const Value* fn = call.as_dict().find("function");
    if (fn == nullptr || !fn->is_dict()) {
      normalized.push_back(call);
      continue;
    }
    Dict function = fn->as_dict();
    if (auto err = parse_arguments(function)) return err;
    Dict with_args = call.as_dict();
    with_args.set("function", Value::dict(std::move(function)));
    normalized.push_back(Value::dict(std::move(with_args)));
  }
  message.set("tool_calls", Value::list(std::move(normalized)));
  return std::nullopt;
}

std::optional<ApiError> read_messages(FieldReader& f, Value* messages) {
  auto e = f.element("messages");
  if (!e) return ApiError::bad_request("'messages' is required", "messages");
  simdjson::dom::array list;
  if (e->get_array().get(list) != simdjson::SUCCESS) {
    return ApiError::bad_request(
        std::string("'messages' must be a list, got ") + json_type_phrase(*e), "messages");
  }
  ValueList out;
  for (simdjson::dom::element m : list) {
    const Value converted = to_template_value(m);
    const Value* role = converted.is_dict() ? converted.as_dict().find("role") : nullptr;
    if (role == nullptr || !role->is_string()) {
      return ApiError::bad_request("each message must be an object with a string 'role'",
                                   "messages");
    }
    const bool is_assistant = role->as_string() == "assistant";
    Dict message = converted.as_dict();
    if (auto err = normalize_content(message)) return err;
    if (is_assistant) {
      if (auto err = normalize_tool_calls(message)) return err;
    }
    out.push_back(Value::dict(std::move(message)));
  }
  *messages = Value::list(std::move(out));
  return std::nullopt;
}

// tools and chat_template_kwargs for the template; `tools_json` (may be null)
// receives the tools for the tool-calling side.
void read_template_fields(FieldReader& f, ChatTemplateInputs* inputs,
                          nlohmann::ordered_json* tools_json) {
  if (auto t = f.element("tools")) {
    simdjson::dom::array tools;
    if (t->get_array().get(tools) != simdjson::SUCCESS) {
      f.fail(ApiError::bad_request("'tools' must be a list", "tools"));
    } else if (tools.size() > 0) {
      inputs->tools = to_template_value(*t);
      if (tools_json != nullptr) *tools_json = to_ordered_json(*t);
    }
  }
  if (f.object("chat_template_kwargs")) {
    inputs->kwargs = to_template_value(*f.element("chat_template_kwargs"));
  }
}

template <typename T>
ApiOr<T> finish(FieldReader& f, T value) {
  if (!f.ok()) return *f.error();
  return value;
}

}  // namespace

ApiOr<CompletionRequest> parse_completion_request(std::string_view body) {
  RequestJson json;
  if (auto err = json.parse(body)) return *err;
  FieldReader f(json.root());
  CompletionRequest r;
  r.model = f.string("model").value_or("");
  auto prompt = f.element("prompt");
  if (!prompt) return ApiError::bad_request("'prompt' is required", "prompt");
  if (auto err = read_prompts(*prompt, &r.prompts)) return *err;
  r.echo = f.boolean("echo").value_or(false);
  if (auto lp = f.integer("logprobs")) {
    if (*lp < 0 || *lp > Limits::kMaxLogprobs) {
      f.fail(
          range_error("logprobs", "must be in [0, " + std::to_string(Limits::kMaxLogprobs) + "]"));
    }
    r.logprobs = static_cast<int>(*lp);
  }
  r.add_special_tokens = f.boolean("add_special_tokens").value_or(true);
  if (f.has("suffix")) f.fail(ApiError::bad_request("suffix is not currently supported", "suffix"));
  read_sampling(f, r.sampling);
  r.sampling.max_tokens = f.integer("max_tokens");
  validate_sampling(f, r.sampling);
  return finish(f, std::move(r));
}

ApiOr<ChatRequest> parse_chat_request(std::string_view body) {
  RequestJson json;
  if (auto err = json.parse(body)) return *err;
  FieldReader f(json.root());
  ChatRequest r;
  r.model = f.string("model").value_or("");
  if (auto err = read_messages(f, &r.template_inputs.messages)) return *err;
  read_template_fields(f, &r.template_inputs, &r.tools);
  r.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  r.continue_final_message = f.boolean("continue_final_message").value_or(false);
  if (r.add_generation_prompt && r.continue_final_message) {
    f.fail(ApiError::bad_request(
        "Cannot set both `continue_final_message` and `add_generation_prompt` to True."));
  }
  r.add_special_tokens = f.boolean("add_special_tokens").value_or(false);
  r.logprobs = f.boolean("logprobs").value_or(false);
  if (auto top = f.integer("top_logprobs")) {
    if (*top < 0 || *top > Limits::kMaxLogprobs) {
      f.fail(range_error("top_logprobs",
                         "must be in [0, " + std::to_string(Limits::kMaxLogprobs) + "]"));
    } else if (*top > 0 && !r.logprobs) {
      f.fail(ApiError::bad_request("when using `top_logprobs`, `logprobs` must be set to true.",
                                   "top_logprobs"));
    }
    r.top_logprobs = static_cast<int>(*top);
  }
  read_tool_choice(f, r);
  r.echo = f.boolean("echo").value_or(false);
  r.chat_template = f.string("chat_template");
  read_sampling(f, r.sampling);
  // max_completion_tokens wins over the deprecated max_tokens.
  r.sampling.max_tokens = f.integer("max_completion_tokens");
  if (!r.sampling.max_tokens) r.sampling.max_tokens = f.integer("max_tokens");
  validate_sampling(f, r.sampling);
  return finish(f, std::move(r));
}

ApiOr<TokenizeRequest> parse_tokenize_request(std::string_view body) {
  RequestJson json;
  if (auto err = json.parse(body)) return *err;
  FieldReader f(json.root());
  TokenizeRequest r;
  r.model = f.string("model").value_or("");
  r.return_token_strs = f.boolean("return_token_strs").value_or(false);
  if (f.has("messages")) {
    r.is_chat = true;
    if (auto err = read_messages(f, &r.template_inputs.messages)) return *err;
    read_template_fields(f, &r.template_inputs, nullptr);
    r.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
    r.add_special_tokens = f.boolean("add_special_tokens").value_or(false);
  } else {
    auto prompt = f.string("prompt");
    if (!prompt && f.ok()) return ApiError::bad_request("'prompt' or 'messages' is required");
    r.prompt = prompt.value_or("");
    r.add_special_tokens = f.boolean("add_special_tokens").value_or(true);
  }
  return finish(f, std::move(r));
}

ApiOr<DetokenizeRequest> parse_detokenize_request(std::string_view body) {
  RequestJson json;
  if (auto err = json.parse(body)) return *err;
  FieldReader f(json.root());
  DetokenizeRequest r;
  r.model = f.string("model").value_or("");
  auto tokens = f.int_list("tokens");
  if (!tokens && f.ok()) return ApiError::bad_request("'tokens' is required", "tokens");
  r.tokens = tokens.value_or(std::vector<int32_t>{});
  return finish(f, std::move(r));
}

}  // namespace strata::server
