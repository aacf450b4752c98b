// Opens a model from disk, whatever its format, into one description: config,
// sampling defaults, weights (memory-mapped) and where the tokenizer lives.
//
// Accepted paths:
//  - a Hugging Face directory: config.json, model.safetensors or
//    model.safetensors.index.json + shards, optional generation_config.json,
//    tokenizer.json, tokenizer_config.json;
//  - a .gguf file (config from metadata, tokenizer in `gguf`'s metadata).
//
// Operations: open_model (any thread; reads files). The result is move-only
// data; its WeightSource and GgufFile are const and shareable afterwards.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "model/loader/gguf.h"
#include "model/loader/weight_source.h"
#include "model/model_config.h"

namespace strata::model {

struct ModelFiles {
  enum class Format { kHuggingFace, kGguf };
  Format format = Format::kHuggingFace;
  std::string path;  // what the user named
  ModelConfig config;
  GenerationConfig generation;  // present = false for GGUF and HF dirs without one
  WeightSource weights;
  std::string tokenizer_json_path;       // HF dir: dir/tokenizer.json if present, else ""
  std::string tokenizer_config_path;     // HF dir: dir/tokenizer_config.json if present, else ""
  std::shared_ptr<const GgufFile> gguf;  // GGUF only: metadata incl. tokenizer.ggml.*
};

StatusOr<ModelFiles> open_model(const std::string& path);

}  // namespace strata::model
