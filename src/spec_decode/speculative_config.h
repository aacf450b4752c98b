// What --speculative-config asks for, as plain data (the JSON is parsed in
// server/speculative_config.h). vLLM's SpeculativeConfig keys and defaults.
//
// Invariants (the parser guarantees them): method kNgram implies
// num_speculative_tokens >= 1 and 1 <= prompt_lookup_min <= prompt_lookup_max;
// kDraftModel implies num_speculative_tokens >= 1 and a non-empty model.
// Plain data; any thread.
#pragma once

#include <cstdint>
#include <string>

namespace strata::spec_decode {

enum class SpeculativeMethod { kNone, kNgram, kDraftModel };

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::kNone;
  int64_t num_speculative_tokens = 0;  // k: drafts proposed per step, at most
  int64_t prompt_lookup_max = 5;       // longest n-gram matched
  int64_t prompt_lookup_min = 5;       // shortest n-gram matched
  // kDraftModel: the draft model's path or id, as given (loaded like the
  // target, by the caller that builds the engine).
  std::string model;
  // vLLM's disable_by_batch_size: no drafts while more requests than this
  // are running (0 = never disabled).
  int64_t disable_by_batch_size = 0;

  bool enabled() const { return method != SpeculativeMethod::kNone; }
};

}  // namespace strata::spec_decode
