#include "model/loader/model_files.h"

#include <sys/stat.h>

#include <utility>

#include "base/mapped_file.h"
#include "model/loader/gguf_mapping.h"
#include "model/loader/safetensors.h"

namespace strata::model {
namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string optional_file(const std::string& path) { return is_regular_file(path) ? path : ""; }

StatusOr<WeightSource> open_hf_weights(const std::string& dir) {
  const std::string index = dir + "/model.safetensors.index.json";
  if (is_regular_file(index)) return open_safetensors_index(index);
  const std::string single = dir + "/model.safetensors";
  if (is_regular_file(single)) return open_safetensors(single);
  return not_found(dir +
                   ": no model.safetensors or model.safetensors.index.json "
                   "(Strata reads safetensors weights, not .bin/.pt)");
}

StatusOr<ModelFiles> open_hf_dir(const std::string& dir) {
  ModelFiles files;
  files.format = ModelFiles::Format::kHuggingFace;
  files.path = dir;
  const std::string config_path = dir + "/config.json";
  STRATA_ASSIGN_OR_RETURN(std::string config_text, read_file_to_string(config_path));
  STRATA_ASSIGN_OR_RETURN(files.config, parse_hf_config(config_text, config_path));
  const std::string generation_path = dir + "/generation_config.json";
  if (is_regular_file(generation_path)) {
    STRATA_ASSIGN_OR_RETURN(std::string text, read_file_to_string(generation_path));
    STRATA_ASSIGN_OR_RETURN(files.generation, parse_generation_config(text, generation_path));
  }
  STRATA_ASSIGN_OR_RETURN(files.weights, open_hf_weights(dir));
  files.tokenizer_json_path = optional_file(dir + "/tokenizer.json");
  files.tokenizer_config_path = optional_file(dir + "/tokenizer_config.json");
  return files;
}

StatusOr<ModelFiles> open_gguf(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(path));
  ModelFiles files;
  files.format = ModelFiles::Format::kGguf;
  files.path = path;
  STRATA_ASSIGN_OR_RETURN(files.config, gguf_model_config(gguf));
  STRATA_ASSIGN_OR_RETURN(files.weights, gguf_weight_source(gguf));
  files.gguf = std::make_shared<const GgufFile>(std::move(gguf));
  return files;
}

}  // namespace

StatusOr<ModelFiles> open_model(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  if (is_directory(trimmed)) {
    if (!is_regular_file(trimmed + "/config.json")) {
      return not_found(trimmed +
                       ": directory has no config.json (expected a Hugging Face "
                       "model directory or a .gguf file)");
    }
    return open_hf_dir(trimmed);
  }
  if (is_regular_file(trimmed)) {
    if (ends_with(trimmed, ".gguf")) return open_gguf(trimmed);
    return invalid_argument(trimmed +
                            ": expected a model directory (config.json + "
                            "safetensors) or a .gguf file");
  }
  return not_found(path + ": no such file or directory");
}

}  // namespace strata::model
