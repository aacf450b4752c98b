// Normalizers: text -> text rewrites applied to each piece of the input that
// is not an added token, before pre-tokenization (Hugging Face semantics).
// Supported: NFC, NFD, NFKC, NFKD (utf8proc), Prepend, Replace (literal or
// regex), Strip, Lowercase, Sequence.
//
// Thread-safety: immutable after construction; normalize() is const and safe
// to call concurrently.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "base/status.h"

namespace strata::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `text` (valid UTF-8) in place.
  virtual void normalize(std::string* text) const = 0;
};

// Builds a normalizer from its tokenizer.json object. A JSON null yields a
// null pointer (no normalization).
StatusOr<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& config);

// Literal Prepend and Replace, used to build GGUF SentencePiece tokenizers.
std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix);
std::unique_ptr<Normalizer> make_replace_normalizer(std::string from, std::string to);
std::unique_ptr<Normalizer> make_sequence_normalizer(std::unique_ptr<Normalizer> first,
                                                     std::unique_ptr<Normalizer> second);

}  // namespace strata::tokenizer
