// Loading a Hugging Face tokenizer.json (and optionally tokenizer_config.json).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/json_util.h"
#include "tokenizer/tokenizer_builder.h"

namespace strata::tokenizer {
namespace {

using nlohmann::json;
using MergeList = std::vector<std::pair<std::string, std::string>>;

StatusOr<MergeList> parse_merges(const json& merges) {
  MergeList out;
  out.reserve(merges.size());
  for (const json& m : merges) {
    if (m.is_array() && m.size() == 2) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      continue;
    }
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      return invalid_argument("BPE merge '" + s + "' is not of the form 'left right'");
    }
    out.emplace_back(s.substr(0, space), s.substr(space + 1));
  }
  return out;
}

StatusOr<std::unique_ptr<BpeModel>> parse_model(const json& model) {
  const std::string type = json_type(model);
  if (type != "BPE" && !(type.empty() && model.contains("merges"))) {
    return unimplemented("model type '" + type + "' is not supported (supported: BPE)");
  }
  if (model.contains("dropout") && model["dropout"].is_number() &&
      model["dropout"].get<double>() > 0) {
    return unimplemented("BPE dropout is not supported (inference tokenizers have none)");
  }
  Vocab vocab;
  for (const auto& [token, id_json] : model.at("vocab").items()) {
    STRATA_ASSIGN_OR_RETURN(int32_t id, json_token_id(id_json, "BPE vocab: token '" + token + "'"));
    vocab.emplace(token, id);
  }
  STRATA_ASSIGN_OR_RETURN(MergeList merges, parse_merges(model.value("merges", json::array())));
  BpeOptions options;
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    options.unk_token = model["unk_token"].get<std::string>();
  }
  options.continuing_subword_prefix = json_string(model, "continuing_subword_prefix", "");
  options.end_of_word_suffix = json_string(model, "end_of_word_suffix", "");
  options.fuse_unk = json_bool(model, "fuse_unk", false);
  options.byte_fallback = json_bool(model, "byte_fallback", false);
  options.ignore_merges = json_bool(model, "ignore_merges", false);
  STRATA_ASSIGN_OR_RETURN(BpeModel bpe,
                          BpeModel::create(std::move(vocab), merges, std::move(options)));
  return std::make_unique<BpeModel>(std::move(bpe));
}

StatusOr<std::vector<AddedToken>> parse_added_tokens(const json& list, const BpeModel& model) {
  std::vector<AddedToken> out;
  for (const json& j : list) {
    AddedToken t;
    t.content = j.at("content").get<std::string>();
    if (t.content.empty()) continue;  // HF ignores empty added tokens
    const auto in_vocab = model.token_to_id(t.content);
    if (in_vocab) {
      t.id = *in_vocab;
    } else {
      STRATA_ASSIGN_OR_RETURN(t.id, json_token_id(j.at("id"), "added token '" + t.content + "'"));
    }
    t.special = json_bool(j, "special", false);
    t.single_word = json_bool(j, "single_word", false);
    t.lstrip = json_bool(j, "lstrip", false);
    t.rstrip = json_bool(j, "rstrip", false);
    t.normalized = json_bool(j, "normalized", !t.special);
    out.push_back(std::move(t));
  }
  return out;
}

// bos_token / eos_token of tokenizer_config.json: a string or {"content": ...}.
std::string config_token(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return json_string(*it, "content", "");
  return "";
}

// The first of `names` that is a special added token, or -1.
int32_t first_special(const Tokenizer& t, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const auto id = t.token_to_id(name);
    if (id && t.is_special(*id)) return *id;
  }
  return -1;
}

// A token named by tokenizer_config.json (`key` present; null means none).
int32_t configured_id(const json& config, const char* key, const Tokenizer& t) {
  const std::string name = config_token(config, key);
  return name.empty() ? -1 : t.token_to_id(name).value_or(-1);
}

// BOS/EOS from tokenizer_config.json when it names them, else the first id
// the post-processor adds (BOS) and the usual special token names.
void resolve_bos_eos(const json& config, const PostProcessor& post, const Tokenizer& t,
                     int32_t* bos, int32_t* eos) {
  if (config.contains("bos_token")) {
    *bos = configured_id(config, "bos_token", t);
  } else {
    *bos = post.first_prefix_id();
    if (*bos < 0) *bos = first_special(t, {"<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>"});
  }
  *eos = config.contains("eos_token")
             ? configured_id(config, "eos_token", t)
             : first_special(t, {"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>"});
}

StatusOr<Tokenizer> build_from_json(const json& root, const std::string& name, const json& config) {
  TokenizerParts parts;
  parts.name = name;
  STRATA_ASSIGN_OR_RETURN(parts.model, parse_model(root.at("model")));
  STRATA_ASSIGN_OR_RETURN(parts.normalizer, make_normalizer(root.value("normalizer", json())));
  STRATA_ASSIGN_OR_RETURN(parts.pre_tokenizer,
                          make_pre_tokenizer(root.value("pre_tokenizer", json())));
  STRATA_ASSIGN_OR_RETURN(parts.decoder, make_decoder(root.value("decoder", json())));
  STRATA_ASSIGN_OR_RETURN(parts.post_processor,
                          PostProcessor::from_json(root.value("post_processor", json())));
  STRATA_ASSIGN_OR_RETURN(
      parts.added_tokens,
      parse_added_tokens(root.value("added_tokens", json::array()), *parts.model));
  const PostProcessor post = parts.post_processor;
  Tokenizer tokenizer = TokenizerBuilder::build(std::move(parts));
  int32_t bos = -1, eos = -1;
  resolve_bos_eos(config, post, tokenizer, &bos, &eos);
  return TokenizerBuilder::with_special_ids(std::move(tokenizer), bos, eos);
}

StatusOr<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open tokenizer file '" + path + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

StatusOr<Tokenizer> Tokenizer::from_json(std::string_view json_text, const std::string& name,
                                         std::string_view config_text) {
  try {
    const json root = json::parse(json_text);
    const json config = config_text.empty() ? json::object() : json::parse(config_text);
    auto result = build_from_json(root, name, config);
    if (!result.ok()) return result.status().with_prefix(name);
    return result;
  } catch (const json::exception& e) {
    return invalid_argument(name + ": malformed tokenizer JSON: " + e.what());
  }
}

StatusOr<Tokenizer> Tokenizer::from_json_file(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::string config;
  const auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::exists(config_path, ec)) {
    STRATA_ASSIGN_OR_RETURN(config, read_file(config_path.string()));
  }
  return from_json(text, path, config);
}

}  // namespace strata::tokenizer
