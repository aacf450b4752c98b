// Finds and loads a model's tokenizer: tokenizer.json (+ tokenizer_config.json)
// in a Hugging Face directory, or the vocabulary stored in a GGUF file
// (tokenizer.ggml.*). Lives in engine/ because it joins two modules that do
// not know each other (model loader and tokenizer). Start-up only.
#pragma once

#include <memory>

#include "base/status.h"
#include "model/loader/model_files.h"
#include "tokenizer/tokenizer.h"

namespace strata::engine {

// Returns nullptr (not an error) when the model ships no tokenizer; errors
// when a tokenizer is present but cannot be loaded.
StatusOr<std::unique_ptr<tokenizer::Tokenizer>> load_tokenizer(const model::ModelFiles& files);

// The GGUF tokenizer.ggml.* metadata as a tokenizer::GgufVocab.
StatusOr<tokenizer::GgufVocab> gguf_vocab(const model::GgufFile& gguf);

}  // namespace strata::engine
