// What the benchmark client measured for one request. Times are seconds;
// `start_s` counts from the start of the benchmark run, the others from the
// moment the request left the client.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::bench {

struct RequestRecord {
  bool success = false;
  std::string error;
  int64_t prompt_len = 0;      // usage.prompt_tokens when the server reported it, else the client's
  int64_t output_tokens = 0;   // usage.completion_tokens, else the number of token chunks
  int64_t cached_tokens = -1;  // usage.prompt_tokens_details.cached_tokens; -1 = not reported
  double start_s = 0;          // when the request left the client
  double queue_s = 0;          // client-side wait for a concurrency slot before it left
  double ttft_s = 0;           // first chunk with non-empty `choices`
  double latency_s = 0;        // E2EL: the last such chunk
  std::vector<double> itl_s;   // gaps between consecutive such chunks
  int64_t num_chunks = 0;
  std::string generated_text;
  std::vector<int32_t> output_token_ids;  // only when the server streamed `token_ids`
  int64_t conversation_idx = -1;          // multi-turn only
  int64_t turn_idx = -1;                  // multi-turn only: 0 = first turn
};

}  // namespace strata::bench
