// vLLM's --speculative-config JSON, turned into spec_decode::SpeculativeConfig.
// Accepted keys (vLLM's SpeculativeConfig, same defaults):
//
//   {"method": "ngram",                  also vLLM's legacy {"model": "[ngram]"}
//    "num_speculative_tokens": 4,        required, >= 1
//    "prompt_lookup_max": 5,             ngram: longest n-gram (>= 1)
//    "prompt_lookup_min": 5,             ngram: shortest (>= 1, <= max); when
//                                        only one is given the other equals it
//    "disable_by_batch_size": null,      no drafts above this many running (>= 2)
//    "model": null, "draft_tensor_parallel_size": 1}
//
//   {"method": "draft_model",            also inferred from a "model" that
//    "model": "PATH",                    is not "[ngram]"; required: a
//    "num_speculative_tokens": 4,        smaller model with the same vocab
//    "draft_tensor_parallel_size": 1}    (checked when the engine starts)
//
// Methods "eagle3"/"eagle" are refused with a message saying why; other vLLM
// methods (medusa, mlp_speculator, mtp, suffix) are refused as unsupported.
// Unknown keys, wrong types and impossible combinations (min > max, ngram
// with a model, draft_model without one or with prompt_lookup_*, a
// draft_tensor_parallel_size other than 1) are errors naming the key. Called once at startup (any thread).
#pragma once

#include <string>

#include "base/status.h"
#include "spec_decode/speculative_config.h"

namespace strata::server {

StatusOr<spec_decode::SpeculativeConfig> parse_speculative_config(const std::string& json);

}  // namespace strata::server
