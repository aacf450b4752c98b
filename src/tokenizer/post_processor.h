// Post-processing for a single sequence with add_special_tokens = true: the
// ids that TemplateProcessing ("single" template), RobertaProcessing and
// BertProcessing put around the encoded text. ByteLevel only adjusts offsets
// in HF, so it contributes nothing here. A Sequence applies its processors in
// order (each wraps the previous result).
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "base/status.h"

namespace strata::tokenizer {

class PostProcessor {
 public:
  // JSON null yields a processor that adds nothing.
  static StatusOr<PostProcessor> from_json(const nlohmann::json& config);
  static PostProcessor wrap(std::vector<int32_t> prefix, std::vector<int32_t> suffix);

  // ids -> prefix + ids + suffix.
  std::vector<int32_t> apply(std::vector<int32_t> ids) const;
  // The first id added in front of the text, or -1.
  int32_t first_prefix_id() const;

 private:
  Status add(const nlohmann::json& config);
  std::vector<int32_t> prefix_;
  std::vector<int32_t> suffix_;
};

}  // namespace strata::tokenizer
