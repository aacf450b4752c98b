// Tokenizer: text <-> token ids exactly as Hugging Face `tokenizers` does for
// BPE models (GPT-2, Llama 3, Qwen2/2.5/3 byte-level BPE; Llama 2 / Mistral
// SentencePiece-style BPE with byte fallback), loaded from a tokenizer.json or
// from the vocabulary stored in a GGUF file (tokenizer.ggml.*).
//
// Encode pipeline (per input): added tokens are split out first (raw text,
// then normalized text), each remaining piece is normalized, pre-tokenized
// into words, and every word is turned into ids by the BPE model; with
// add_special_tokens the post-processor adds BOS/EOS-style ids.
// Input that is not valid UTF-8 is first repaired by replacing each maximal
// invalid subpart with U+FFFD (what JavaScript's TextDecoder and Rust's
// from_utf8_lossy do), so raw bytes never reach the model.
//
// Decode: ids -> token strings (optionally skipping special tokens) -> the
// decoder chain -> text (always valid UTF-8). Unknown ids are skipped, as HF
// does.
//
// Thread-safety: a Tokenizer is immutable after loading; encode(), decode()
// and every accessor may be called concurrently from any thread. The BPE word
// cache is per thread. Move-only (it owns the vocabulary).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::tokenizer {

class AddedVocabulary;
class BpeModel;
class Decoder;
class Normalizer;
class PostProcessor;
class PreTokenizer;

// The tokenizer stored in GGUF metadata; the model loader fills it from
// tokenizer.ggml.* keys (this module does not read GGUF files).
struct GgufVocab {
  std::string model;  // tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
  std::string pre;    // tokenizer.ggml.pre: "llama-bpe"/"llama3", "qwen2", "gpt2", ...
  std::vector<std::string> tokens;   // [num_tokens], index = id
  std::vector<float> scores;         // [num_tokens] or empty (llama: merge priority)
  std::vector<int32_t> token_types;  // [num_tokens] or empty: 1 normal, 2 unknown,
                                     // 3 control, 4 user-defined, 5 unused, 6 byte
  std::vector<std::string> merges;   // gpt2: "left right", in rank order
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix (llama only)
};

class Tokenizer {
 public:
  // Loads a tokenizer.json. If a tokenizer_config.json sits next to it, its
  // bos_token / eos_token name the BOS/EOS ids.
  static StatusOr<Tokenizer> from_json_file(const std::string& path);
  // `config_json` is the optional tokenizer_config.json text (may be empty).
  static StatusOr<Tokenizer> from_json(std::string_view json, const std::string& name_for_errors,
                                       std::string_view config_json = {});
  static StatusOr<Tokenizer> from_gguf_vocab(const GgufVocab& vocab);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;
  ~Tokenizer();

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;

  // One past the largest id (model vocabulary and added tokens).
  int64_t vocab_size() const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token's string as stored in the vocabulary ("" for unknown ids).
  std::string id_to_token(int32_t id) const;
  // The exact bytes token `id` contributes to decoded text when it appears in
  // the middle of a sequence (no first-token space stripping): byte-level BPE
  // tokens map back through the GPT-2 byte table; SentencePiece-style tokens
  // turn "\u2581" into " " and a <0xNN> byte-fallback token into that single
  // byte (which may be part of a UTF-8 sequence); added and special tokens
  // give their content. "" for unknown ids. Used by constrained decoding.
  std::string token_bytes(int32_t id) const;
  int32_t bos_token_id() const { return bos_id_; }  // -1 if none
  int32_t eos_token_id() const { return eos_id_; }  // -1 if none
  // True for added tokens flagged special (skipped by skip_special_tokens).
  bool is_special(int32_t id) const;
  // True for added tokens (special or not).
  bool is_added(int32_t id) const;
  // True when the decoder merges <0xXX> byte tokens (SentencePiece style).
  bool has_byte_fallback_decoder() const;
  const std::string& name() const { return name_; }

 private:
  friend class TokenizerBuilder;
  Tokenizer();
  void encode_text(std::string_view text, bool at_input_start, std::vector<int32_t>* ids) const;
  const std::string* token_string(int32_t id) const;

  std::string name_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<AddedVocabulary> added_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<PostProcessor> post_processor_;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  bool byte_level_decoder_ = false;  // the decoder maps GPT-2 byte characters back to bytes
};

}  // namespace strata::tokenizer
