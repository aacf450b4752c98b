// Incremental detokenization for streaming: feed generated token ids one at a
// time and get back the newly completed text.
//
// Guarantees (checked by randomized tests):
//   * a delta never ends inside a UTF-8 character: bytes of an incomplete
//     character (including SentencePiece <0xXX> byte-fallback runs, whose text
//     depends on the whole run) are held back until they complete;
//   * concat(add(id) for all ids) + finish() == tokenizer.decode(ids,
//     skip_special_tokens), byte for byte; held-back text that never completes
//     comes out of finish() exactly as decode() renders it (U+FFFD).
//
// Technique: the prefix/read-offset window of vLLM and TGI. Only a short window
// of ids is decoded per step, text = decode(window) - decode(window prefix),
// so SentencePiece's "strip the leading space of the first token" applies to
// both terms and cancels out. The window prefix always holds at least one
// token that renders text, so a skipped special token never becomes "first".
//
// Options follow vLLM's fast-tokenizer path: skip_special_tokens drops special
// added tokens as decode() does. spaces_between_special_tokens is accepted for
// API compatibility: like HF fast tokenizers (and vLLM on them) Strata's
// decoders never insert spaces between added tokens, so both values give the
// same text (the transformers slow-tokenizer join with " " is not emulated).
//
// Thread-safety: one instance per stream, used by one thread at a time. The
// Tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {

struct DetokenizerOptions {
  bool skip_special_tokens = true;
  bool spaces_between_special_tokens = true;
};

class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(const Tokenizer& tokenizer, DetokenizerOptions options);
  // `context_ids` (e.g. the prompt's last tokens) are decoded for context only,
  // never emitted: a first generated "▁Hello" then streams as " Hello", as vLLM
  // does when it primes with the prompt.
  IncrementalDetokenizer(const Tokenizer& tokenizer, DetokenizerOptions options,
                         const std::vector<int32_t>& context_ids);

  // Appends one id; returns the text it completed (possibly empty).
  std::string add(int32_t id);
  // Flushes held-back text at the end of the stream (call add() no more).
  std::string finish();

  // Number of ids fed (context excluded).
  size_t num_ids() const { return num_ids_; }

 private:
  bool renders_text(int32_t id) const;
  bool is_byte_token(int32_t id) const;
  std::string decode_range(size_t begin, size_t end) const;
  void advance();
  void compact();

  const Tokenizer* tokenizer_;
  DetokenizerOptions options_;
  bool byte_fallback_;
  std::vector<int32_t> ids_;  // the window; earlier ids are dropped
  size_t prefix_offset_ = 0;
  size_t read_offset_ = 0;
  bool last_text_id_is_byte_ = false;
  size_t num_ids_ = 0;
};

}  // namespace strata::tokenizer
