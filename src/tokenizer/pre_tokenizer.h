// Pre-tokenizers: split each normalized piece of the input into the "words"
// the model tokenizes independently (Hugging Face semantics).
// Supported: ByteLevel (GPT-2 regex, add_prefix_space, use_regex), Split
// (literal/regex pattern, behaviors Removed/Isolated/MergedWithPrevious/
// MergedWithNext/Contiguous, invert), Metaspace (prepend_scheme always/first/
// never, split), Digits, Whitespace, WhitespaceSplit, Sequence.
//
// Thread-safety: immutable after construction; pre_tokenize() is const.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::tokenizer {

struct Piece {
  std::string text;
  // True when the piece starts at byte 0 of the original input (HF's
  // offsets_original().0 == 0; Metaspace prepend_scheme "first" needs it).
  bool at_input_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` with their sub-pieces, in order; empty pieces are dropped.
  virtual void pre_tokenize(std::vector<Piece>* pieces) const = 0;
};

// JSON null yields a null pointer (the whole piece is one word).
StatusOr<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& config);

// Regex split (behavior Isolated) followed by byte-level mapping: the shape of
// every GPT-2 / Llama 3 / Qwen2 tokenizer, used for GGUF vocabularies.
StatusOr<std::unique_ptr<PreTokenizer>> make_byte_level_split(const std::string& regex);

// The split pattern of GPT-2's ByteLevel pre-tokenizer.
extern const char* const kGpt2Pattern;

}  // namespace strata::tokenizer
