// Text <-> token ids for the CLI: the model's tokenizer (tokenizer.json in a
// Hugging Face directory, or the vocabulary stored in a GGUF file), plus the
// end-of-sequence ids generation stops on (generation_config.json, then
// config.json, then the tokenizer).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/loader/model_files.h"

namespace strata::tokenizer {
class Tokenizer;
}

namespace strata::app {

class TextCodec {
 public:
  static StatusOr<TextCodec> for_model(const model::ModelFiles& files);

  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  // Encodes with the tokenizer's special tokens (BOS) as transformers does.
  StatusOr<std::vector<int32_t>> encode(const std::string& text) const;
  // Decodes skipping special tokens; without a tokenizer, prints the ids.
  std::string decode(const std::vector<int32_t>& ids) const;
  const std::vector<int32_t>& eos_token_ids() const { return eos_token_ids_; }

 private:
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;  // null: ids only
  std::vector<int32_t> eos_token_ids_;
};

}  // namespace strata::app
