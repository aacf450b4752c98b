#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer_builder.h"
#include "tokenizer/utf8.h"

namespace strata::tokenizer {

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer TokenizerBuilder::build(TokenizerParts parts) {
  Tokenizer t;
  t.name_ = std::move(parts.name);
  t.added_ =
      std::make_unique<AddedVocabulary>(std::move(parts.added_tokens), parts.normalizer.get());
  t.normalizer_ = std::move(parts.normalizer);
  t.pre_tokenizer_ = std::move(parts.pre_tokenizer);
  t.model_ = std::move(parts.model);
  t.decoder_ = std::move(parts.decoder);
  t.post_processor_ = std::make_unique<PostProcessor>(std::move(parts.post_processor));
  t.bos_id_ = parts.bos_id;
  t.eos_id_ = parts.eos_id;
  if (t.decoder_) {
    // "\xC4\xA0" is the GPT-2 stand-in for the space byte: only a byte-level decoder turns it
    // into " ".
    std::vector<std::string> probe = {"\xC4\xA0"};
    t.decoder_->decode_chain(&probe);
    t.byte_level_decoder_ = probe.size() == 1 && probe[0] == " ";
  }
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = utf8_lossy(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<Segment> raw, normalized;
  added_->find_matches(text, /*normalized_set=*/false, &raw);
  std::string piece;
  for (const Segment& seg : raw) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    if (seg.end == seg.begin) continue;
    piece.assign(text.substr(seg.begin, seg.end - seg.begin));
    if (normalizer_) normalizer_->normalize(&piece);
    normalized.clear();
    added_->find_matches(piece, /*normalized_set=*/true, &normalized);
    for (const Segment& sub : normalized) {
      if (sub.id >= 0) {
        ids.push_back(sub.id);
      } else if (sub.end > sub.begin) {
        encode_text(std::string_view(piece).substr(sub.begin, sub.end - sub.begin),
                    seg.begin == 0 && sub.begin == 0, &ids);
      }
    }
  }
  if (add_special_tokens) ids = post_processor_->apply(std::move(ids));
  return ids;
}

void Tokenizer::encode_text(std::string_view text, bool at_input_start,
                            std::vector<int32_t>* ids) const {
  if (!pre_tokenizer_) {
    model_->tokenize(text, ids);
    return;
  }
  thread_local std::vector<Piece> pieces;
  pieces.clear();
  pieces.push_back({std::string(text), at_input_start});
  pre_tokenizer_->pre_tokenize(&pieces);
  for (const Piece& p : pieces) model_->tokenize(p.text, ids);
}

const std::string* Tokenizer::token_string(int32_t id) const {
  if (const std::string* form = added_->decode_form(id)) return form;
  const std::string& token = model_->id_to_token(id);
  return token.empty() ? nullptr : &token;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string* token = token_string(id);
    if (token == nullptr) continue;
    if (skip_special_tokens && added_->is_special_content(*token)) continue;
    tokens.push_back(*token);
  }
  std::string text;
  if (!decoder_) {
    for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
    return text;
  }
  decoder_->decode_chain(&tokens);
  for (const std::string& t : tokens) text += t;
  return text;
}

int64_t Tokenizer::vocab_size() const {
  int64_t limit = model_->id_limit();
  for (const AddedToken& t : added_->tokens()) limit = std::max<int64_t>(limit, int64_t{t.id} + 1);
  return limit;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* t = added_->find_by_content(token)) return t->id;
  return model_->token_to_id(token);
}

std::string Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* t = added_->find_by_id(id)) return t->content;
  return model_->id_to_token(id);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (const AddedToken* t = added_->find_by_id(id)) return t->content;
  const std::string& token = model_->id_to_token(id);
  if (token.empty() || !decoder_) return token;
  std::string out;
  if (byte_level_decoder_) {
    if (!byte_level_decode(token, &out)) out = token;
    return out;
  }
  if (decoder_->has_byte_fallback()) {
    const int byte = parse_byte_token(token);
    if (byte >= 0) return std::string(1, static_cast<char>(byte));
  }
  // Mid-sequence text: decode after an anchor token so that first-token rules (Strip, Metaspace
  // prefix removal) do not apply, then drop the anchor.
  std::vector<std::string> tokens = {"a", token};
  decoder_->decode_chain(&tokens);
  for (const std::string& piece : tokens) out += piece;
  if (!out.empty() && out[0] == 'a') out.erase(0, 1);
  return out;
}

bool Tokenizer::is_special(int32_t id) const {
  const AddedToken* t = added_->find_by_id(id);
  return t != nullptr && t->special;
}

bool Tokenizer::is_added(int32_t id) const { return added_->find_by_id(id) != nullptr; }

bool Tokenizer::has_byte_fallback_decoder() const {
  return decoder_ != nullptr && decoder_->has_byte_fallback();
}

}  // namespace strata::tokenizer
