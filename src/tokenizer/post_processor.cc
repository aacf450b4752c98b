#include "tokenizer/post_processor.h"

#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/json_util.h"

namespace strata::tokenizer {
namespace {

// Ids of a TemplateProcessing special token named `name`.
StatusOr<std::vector<int32_t>> template_ids(const nlohmann::json& config, const std::string& name) {
  auto specials = config.find("special_tokens");
  if (specials == config.end() || !specials->contains(name)) {
    return invalid_argument("post_processor TemplateProcessing: special token '" + name +
                            "' is not in special_tokens");
  }
  std::vector<int32_t> ids;
  for (const nlohmann::json& id_json : (*specials)[name].at("ids")) {
    STRATA_ASSIGN_OR_RETURN(int32_t id,
                            json_token_id(id_json, "post_processor special token '" + name + "'"));
    ids.push_back(id);
  }
  return ids;
}

// [cls_or_sep_name, id] pairs used by Roberta/Bert processing.
StatusOr<int32_t> pair_id(const nlohmann::json& config, const char* key) {
  return json_token_id(config.at(key).at(1), std::string("post_processor ") + key);
}

}  // namespace

StatusOr<PostProcessor> PostProcessor::from_json(const nlohmann::json& config) {
  PostProcessor processor;
  if (!config.is_null()) STRATA_RETURN_IF_ERROR(processor.add(config));
  return processor;
}

PostProcessor PostProcessor::wrap(std::vector<int32_t> prefix, std::vector<int32_t> suffix) {
  PostProcessor processor;
  processor.prefix_ = std::move(prefix);
  processor.suffix_ = std::move(suffix);
  return processor;
}

Status PostProcessor::add(const nlohmann::json& config) {
  const std::string type = json_type(config);
  std::vector<int32_t> before, after;
  if (type == "Sequence") {
    for (const auto& child : config.at("processors")) STRATA_RETURN_IF_ERROR(add(child));
    return Status();
  }
  if (type == "ByteLevel") return Status();
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    STRATA_ASSIGN_OR_RETURN(int32_t cls_id, pair_id(config, "cls"));
    STRATA_ASSIGN_OR_RETURN(int32_t sep_id, pair_id(config, "sep"));
    before.push_back(cls_id);
    after.push_back(sep_id);
  } else if (type == "TemplateProcessing") {
    bool seen_sequence = false;
    for (const auto& item : config.at("single")) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      const std::string name = item.at("SpecialToken").at("id").get<std::string>();
      STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, template_ids(config, name));
      auto& target = seen_sequence ? after : before;
      target.insert(target.end(), ids.begin(), ids.end());
    }
  } else {
    return unimplemented("post_processor type '" + type +
                         "' is not supported (supported: TemplateProcessing, ByteLevel, "
                         "RobertaProcessing, BertProcessing, Sequence)");
  }
  prefix_.insert(prefix_.begin(), before.begin(), before.end());
  suffix_.insert(suffix_.end(), after.begin(), after.end());
  return Status();
}

std::vector<int32_t> PostProcessor::apply(std::vector<int32_t> ids) const {
  if (prefix_.empty() && suffix_.empty()) return ids;
  std::vector<int32_t> out;
  out.reserve(prefix_.size() + ids.size() + suffix_.size());
  out.insert(out.end(), prefix_.begin(), prefix_.end());
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), suffix_.begin(), suffix_.end());
  return out;
}

int32_t PostProcessor::first_prefix_id() const { return prefix_.empty() ? -1 : prefix_[0]; }

}  // namespace strata::tokenizer
