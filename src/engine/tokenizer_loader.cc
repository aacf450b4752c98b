#include "engine/tokenizer_loader.h"

namespace strata::engine {
StatusOr<tokenizer::GgufVocab> gguf_vocab(const model::GgufFile& gguf) {
  tokenizer::GgufVocab v;
  STRATA_ASSIGN_OR_RETURN(v.model, gguf.get_string("tokenizer.ggml.model"));
  if (gguf.has("tokenizer.ggml.pre")) {
    STRATA_ASSIGN_OR_RETURN(v.pre, gguf.get_string("tokenizer.ggml.pre"));
  }
  STRATA_ASSIGN_OR_RETURN(v.tokens, gguf.get_string_array("tokenizer.ggml.tokens"));
  if (gguf.has("tokenizer.ggml.scores")) {
    STRATA_ASSIGN_OR_RETURN(std::vector<double> scores,
                            gguf.get_float_array("tokenizer.ggml.scores"));
    v.scores.assign(scores.begin(), scores.end());
  }
  if (gguf.has("tokenizer.ggml.token_type")) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> types,
                            gguf.get_int_array("tokenizer.ggml.token_type"));
    v.token_types.assign(types.begin(), types.end());
  }
  if (gguf.has("tokenizer.ggml.merges")) {
    STRATA_ASSIGN_OR_RETURN(v.merges, gguf.get_string_array("tokenizer.ggml.merges"));
  }
  auto id = [&gguf](const char* key, int32_t* out) -> Status {
    if (!gguf.has(key)) return Status();
    STRATA_ASSIGN_OR_RETURN(int64_t value, gguf.get_int(key));
    *out = static_cast<int32_t>(value);
    return Status();
  };
  STRATA_RETURN_IF_ERROR(id("tokenizer.ggml.bos_token_id", &v.bos_id));
  STRATA_RETURN_IF_ERROR(id("tokenizer.ggml.eos_token_id", &v.eos_id));
  STRATA_RETURN_IF_ERROR(id("tokenizer.ggml.unknown_token_id", &v.unk_id));
  STRATA_RETURN_IF_ERROR(id("tokenizer.ggml.padding_token_id", &v.pad_id));
  auto flag = [&gguf](const char* key, bool* out) -> Status {
    if (!gguf.has(key)) return Status();
    STRATA_ASSIGN_OR_RETURN(*out, gguf.get_bool(key));
    return Status();
  };
  // llama.cpp's default: SentencePiece vocabularies add BOS unless told otherwise.
  v.add_bos = v.model == "llama";
  STRATA_RETURN_IF_ERROR(flag("tokenizer.ggml.add_bos_token", &v.add_bos));
  STRATA_RETURN_IF_ERROR(flag("tokenizer.ggml.add_eos_token", &v.add_eos));
  STRATA_RETURN_IF_ERROR(flag("tokenizer.ggml.add_space_prefix", &v.add_space_prefix));
  return v;
}

StatusOr<std::unique_ptr<tokenizer::Tokenizer>> load_tokenizer(const model::ModelFiles& files) {
  if (files.format == model::ModelFiles::Format::kGguf) {
    if (!files.gguf || !files.gguf->has("tokenizer.ggml.tokens")) return std::unique_ptr<tokenizer::Tokenizer>();
    StatusOr<tokenizer::GgufVocab> vocab = gguf_vocab(*files.gguf);
    if (!vocab.ok()) return vocab.status().with_prefix(files.path);
    StatusOr<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::from_gguf_vocab(*vocab);
    if (!tok.ok()) return tok.status().with_prefix(files.path);
    return std::make_unique<tokenizer::Tokenizer>(std::move(*tok));
  }
  if (files.tokenizer_json_path.empty()) return std::unique_ptr<tokenizer::Tokenizer>();
  StatusOr<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::from_json_file(files.tokenizer_json_path);
  if (!tok.ok()) return tok.status();
  return std::make_unique<tokenizer::Tokenizer>(std::move(*tok));
}

}  // namespace strata::engine
