// Mapping a GGUF vocabulary (tokenizer.ggml.*) onto the tokenizer.json
// components: "gpt2" -> byte-level BPE with the split regex named by `pre`;
// "llama" -> SentencePiece-style BPE (merges ranked by the merged piece's
// score, byte fallback, "▁" for spaces), the shape of Llama 2's tokenizer.json.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "base/log.h"
#include "tokenizer/tokenizer_builder.h"

namespace strata::tokenizer {
namespace {

enum TokenType {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

const char* const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kSpaceMarker = "\xE2\x96\x81";  // U+2581

int32_t token_type(const GgufVocab& v, size_t id) {
  return id < v.token_types.size() ? v.token_types[id] : kNormal;
}

StatusOr<Vocab> make_vocab(const GgufVocab& v) {
  Vocab vocab;
  vocab.reserve(v.tokens.size());
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    vocab.emplace(v.tokens[id], static_cast<int32_t>(id));  // first id wins on duplicates
  }
  if (vocab.empty()) return invalid_argument("GGUF vocab has no tokens");
  return vocab;
}

// Control tokens become special added tokens, user-defined ones plain added
// tokens; both are matched before the model, as llama.cpp does.
std::vector<AddedToken> added_tokens(const GgufVocab& v) {
  std::vector<AddedToken> out;
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const int32_t type = token_type(v, id);
    if ((type != kControl && type != kUserDefined) || v.tokens[id].empty()) continue;
    AddedToken t;
    t.content = v.tokens[id];
    t.id = static_cast<int32_t>(id);
    t.special = type == kControl;
    out.push_back(std::move(t));
  }
  return out;
}

PostProcessor bos_eos_processor(const GgufVocab& v) {
  std::vector<int32_t> prefix, suffix;
  if (v.add_bos && v.bos_id >= 0) prefix.push_back(v.bos_id);
  if (v.add_eos && v.eos_id >= 0) suffix.push_back(v.eos_id);
  return PostProcessor::wrap(std::move(prefix), std::move(suffix));
}

StatusOr<std::vector<std::pair<std::string, std::string>>> split_merges(const GgufVocab& v) {
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(v.merges.size());
  for (const std::string& m : v.merges) {
    const size_t space = m.find(' ', 1);
    if (space == std::string::npos) return invalid_argument("GGUF merge '" + m + "' has no space");
    merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  return merges;
}

const char* pattern_for(const std::string& pre) {
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") return kLlama3Pattern;
  if (pre == "qwen2") return kQwen2Pattern;
  if (!pre.empty() && pre != "gpt2" && pre != "default") {
    STRATA_LOG(kWarning) << "GGUF tokenizer.ggml.pre '" << pre
                         << "' is not known; using the GPT-2 split pattern";
  }
  return kGpt2Pattern;
}

StatusOr<TokenizerParts> gpt2_parts(const GgufVocab& v) {
  TokenizerParts parts;
  STRATA_ASSIGN_OR_RETURN(Vocab vocab, make_vocab(v));
  STRATA_ASSIGN_OR_RETURN(auto merges, split_merges(v));
  const char* pattern = pattern_for(v.pre);
  BpeOptions options;
  options.ignore_merges = pattern == kLlama3Pattern;  // as Llama 3's tokenizer.json
  STRATA_ASSIGN_OR_RETURN(BpeModel model, BpeModel::create(std::move(vocab), merges, options));
  parts.model = std::make_unique<BpeModel>(std::move(model));
  STRATA_ASSIGN_OR_RETURN(parts.pre_tokenizer, make_byte_level_split(pattern));
  if (pattern == kQwen2Pattern) {
    // Qwen2's tokenizer.json normalizes to NFC; GGUF does not record it (and
    // llama.cpp skips it), but Strata follows the Hugging Face tokenizer.
    STRATA_ASSIGN_OR_RETURN(parts.normalizer, make_normalizer(nlohmann::json{{"type", "NFC"}}));
  }
  parts.decoder = make_byte_level_decoder();
  return parts;
}

// SentencePiece BPE merges: every split of a piece into two vocabulary pieces,
// ranked by the piece's score (highest first; ties by id).
std::vector<std::pair<std::string, std::string>> spm_merges(const GgufVocab& v,
                                                            const Vocab& vocab) {
  std::vector<size_t> order(v.tokens.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto score = [&](size_t id) { return id < v.scores.size() ? v.scores[id] : 0.0f; };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score(a) > score(b); });
  std::vector<std::pair<std::string, std::string>> merges;
  for (size_t id : order) {
    const int32_t type = token_type(v, id);
    if (type != kNormal) continue;
    const std::string& piece = v.tokens[id];
    for (size_t cut = 1; cut < piece.size(); ++cut) {
      if ((static_cast<uint8_t>(piece[cut]) & 0xC0) == 0x80) continue;  // not a char boundary
      const std::string_view left(piece.data(), cut), right(piece.data() + cut, piece.size() - cut);
      if (vocab.find(left) != vocab.end() && vocab.find(right) != vocab.end()) {
        merges.emplace_back(std::string(left), std::string(right));
      }
    }
  }
  return merges;
}

StatusOr<TokenizerParts> llama_parts(const GgufVocab& v) {
  TokenizerParts parts;
  STRATA_ASSIGN_OR_RETURN(Vocab vocab, make_vocab(v));
  const auto merges = spm_merges(v, vocab);
  BpeOptions options;
  options.byte_fallback = true;
  options.fuse_unk = true;
  if (v.unk_id >= 0 && static_cast<size_t>(v.unk_id) < v.tokens.size()) {
    options.unk_token = v.tokens[v.unk_id];
  }
  STRATA_ASSIGN_OR_RETURN(BpeModel model, BpeModel::create(std::move(vocab), merges, options));
  parts.model = std::make_unique<BpeModel>(std::move(model));
  auto replace = make_replace_normalizer(" ", kSpaceMarker);
  parts.normalizer =
      v.add_space_prefix
          ? make_sequence_normalizer(make_prepend_normalizer(kSpaceMarker), std::move(replace))
          : std::move(replace);
  parts.decoder = make_sentencepiece_decoder();
  return parts;
}

}  // namespace

StatusOr<Tokenizer> Tokenizer::from_gguf_vocab(const GgufVocab& v) {
  if (!v.scores.empty() && v.scores.size() != v.tokens.size()) {
    return invalid_argument("GGUF vocab: " + std::to_string(v.scores.size()) + " scores for " +
                            std::to_string(v.tokens.size()) + " tokens");
  }
  if (!v.token_types.empty() && v.token_types.size() != v.tokens.size()) {
    return invalid_argument("GGUF vocab: " + std::to_string(v.token_types.size()) +
                            " token types for " + std::to_string(v.tokens.size()) + " tokens");
  }
  StatusOr<TokenizerParts> parts =
      v.model == "gpt2" ? gpt2_parts(v)
      : v.model == "llama"
          ? llama_parts(v)
          : StatusOr<TokenizerParts>(unimplemented("GGUF tokenizer model '" + v.model +
                                                   "' is not supported (supported: "
                                                   "gpt2, llama)"));
  if (!parts.ok()) return parts.status().with_prefix("GGUF vocab");
  TokenizerParts p = std::move(parts).value();
  p.name = "gguf:" + v.model + (v.pre.empty() ? "" : "/" + v.pre);
  p.added_tokens = added_tokens(v);
  p.post_processor = bos_eos_processor(v);
  p.bos_id = v.bos_id;
  p.eos_id = v.eos_id;
  return TokenizerBuilder::build(std::move(p));
}

}  // namespace strata::tokenizer
