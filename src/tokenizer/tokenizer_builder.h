// Assembles a Tokenizer from its components (internal: used by the
// tokenizer.json and GGUF loaders).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {

struct TokenizerParts {
  std::string name;
  std::unique_ptr<Normalizer> normalizer;       // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<BpeModel> model;              // required
  std::vector<AddedToken> added_tokens;
  std::unique_ptr<Decoder> decoder;  // may be null
  PostProcessor post_processor = PostProcessor::wrap({}, {});
  int32_t bos_id = -1;
  int32_t eos_id = -1;
};

class TokenizerBuilder {
 public:
  static Tokenizer build(TokenizerParts parts);
  static Tokenizer with_special_ids(Tokenizer tokenizer, int32_t bos_id, int32_t eos_id) {
    tokenizer.bos_id_ = bos_id;
    tokenizer.eos_id_ = eos_id;
    return tokenizer;
  }
};

}  // namespace strata::tokenizer
