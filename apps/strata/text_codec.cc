#include "text_codec.h"

#include "engine/tokenizer_loader.h"
#include "tokenizer/tokenizer.h"

namespace strata::app {

StatusOr<TextCodec> TextCodec::for_model(const model::ModelFiles& files) {
  TextCodec codec;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok,
                          engine::load_tokenizer(files));
  codec.tokenizer_ = std::move(tok);
  std::vector<int64_t> eos = files.generation.eos_token_ids;
  if (eos.empty()) eos = files.config.eos_token_ids;
  for (int64_t id : eos) codec.eos_token_ids_.push_back(static_cast<int32_t>(id));
  if (codec.eos_token_ids_.empty() && codec.tokenizer_ && codec.tokenizer_->eos_token_id() >= 0) {
    codec.eos_token_ids_.push_back(codec.tokenizer_->eos_token_id());
  }
  return codec;
}

StatusOr<std::vector<int32_t>> TextCodec::encode(const std::string& text) const {
  if (!tokenizer_) {
    return unimplemented("this model has no tokenizer; pass --prompt-ids instead of --prompt");
  }
  return tokenizer_->encode(text, /*add_special_tokens=*/true);
}

std::string TextCodec::decode(const std::vector<int32_t>& ids) const {
  if (tokenizer_) return tokenizer_->decode(ids, /*skip_special_tokens=*/true);
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ' ';
    out += std::to_string(ids[i]);
  }
  return out;
}

}  // namespace strata::app
