#include "server/model_assets.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace strata::server {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A special token in tokenizer_config.json: "x" or {"content": "x", ...}.
std::string token_string(const nlohmann::json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return "";
}

std::string template_from_config(const nlohmann::json& cfg) {
  auto it = cfg.find("chat_template");
  if (it == cfg.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& entry : *it) {
      if (entry.value("name", "") == "default" && entry.contains("template")) {
        return entry["template"].get<std::string>();
      }
    }
  }
  return "";
}

nlohmann::json read_tokenizer_config(const model::ModelFiles& files) {
  if (files.tokenizer_config_path.empty()) return nlohmann::json::object();
  std::optional<std::string> text = read_file(files.tokenizer_config_path);
  if (!text) return nlohmann::json::object();
  nlohmann::json cfg = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return cfg.is_object() ? cfg : nlohmann::json::object();
}

}  // namespace

StatusOr<ChatAssets> load_chat_assets(const model::ModelFiles& files,
                                      const tokenizer::Tokenizer& tokenizer,
                                      const std::string& chat_template_flag) {
  ChatAssets assets;
  nlohmann::json cfg = read_tokenizer_config(files);
  assets.bos_token = token_string(cfg, "bos_token");
  assets.eos_token = token_string(cfg, "eos_token");
  if (assets.bos_token.empty() && tokenizer.bos_token_id() >= 0) {
    assets.bos_token = tokenizer.id_to_token(tokenizer.bos_token_id());
  }
  if (assets.eos_token.empty() && tokenizer.eos_token_id() >= 0) {
    assets.eos_token = tokenizer.id_to_token(tokenizer.eos_token_id());
  }
  std::string source;
  if (!chat_template_flag.empty()) {
    // vLLM accepts a path or the template text itself.
    std::optional<std::string> text = read_file(chat_template_flag);
    bool looks_like_path = chat_template_flag.find("{") == std::string::npos;
    if (!text && looks_like_path) {
      return invalid_argument("--chat-template: cannot read '" + chat_template_flag + "'");
    }
    source = text ? *text : chat_template_flag;
    assets.source = text ? chat_template_flag : "--chat-template (inline)";
  } else if (std::string t = template_from_config(cfg); !t.empty()) {
    source = t;
    assets.source = files.tokenizer_config_path;
  } else if (files.format == model::ModelFiles::Format::kHuggingFace) {
    std::string jinja = (fs::path(files.path) / "chat_template.jinja").string();
    if (std::optional<std::string> text = read_file(jinja)) {
      source = *text;
      assets.source = jinja;
    }
  } else if (files.gguf && files.gguf->has("tokenizer.chat_template")) {
    STRATA_ASSIGN_OR_RETURN(source, files.gguf->get_string("tokenizer.chat_template"));
    assets.source = files.path + " (tokenizer.chat_template)";
  }
  if (source.empty()) return assets;
  StatusOr<chat_template::ChatTemplate> parsed = chat_template::ChatTemplate::parse(source);
  if (!parsed.ok()) return parsed.status().with_prefix("chat template from " + assets.source);
  assets.chat_template = std::move(*parsed);
  return assets;
}

StatusOr<SamplingDefaults> load_sampling_defaults(const model::ModelFiles& files,
                                                  const std::string& mode) {
  SamplingDefaults d;
  if (mode == "vllm") return d;
  model::GenerationConfig gen = files.generation;
  if (mode != "auto") {
    std::string path = (fs::path(mode) / "generation_config.json").string();
    std::optional<std::string> text = read_file(path);
    if (!text) return invalid_argument("--generation-config: cannot read " + path);
    STRATA_ASSIGN_OR_RETURN(gen, model::parse_generation_config(*text, path));
    gen.present = true;
  }
  if (!gen.present) return d;
  d.temperature = gen.temperature;
  d.top_p = gen.top_p;
  d.top_k = gen.top_k;
  d.repetition_penalty = gen.repetition_penalty;
  return d;
}

}  // namespace strata::server
