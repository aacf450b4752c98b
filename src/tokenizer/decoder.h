// Decoders: turn the token strings of a decode() call back into text, with
// Hugging Face's decode_chain semantics (each decoder maps a list of strings
// to a list of strings; the result is their concatenation).
// Supported: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip,
// Sequence.
//
// Thread-safety: immutable after construction; decode_chain() is const.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>* tokens) const = 0;
  // True if the decoder merges runs of <0xXX> tokens (their text depends on
  // the whole run; the incremental detokenizer holds such runs back).
  virtual bool has_byte_fallback() const { return false; }
};

// "<0xAB>" (a SentencePiece byte-fallback token) -> 0xAB, or -1.
int parse_byte_token(const std::string& token);

// JSON null yields a null pointer (tokens are joined with spaces, as HF does).
StatusOr<std::unique_ptr<Decoder>> make_decoder(const nlohmann::json& config);

// Decoders used for GGUF vocabularies.
std::unique_ptr<Decoder> make_byte_level_decoder();
// Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0): Llama 2's decoder.
std::unique_ptr<Decoder> make_sentencepiece_decoder();

}  // namespace strata::tokenizer
