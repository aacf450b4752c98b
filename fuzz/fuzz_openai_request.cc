// Fuzz target: OpenAI request bodies (POST /v1/completions, /v1/chat/completions,
// /tokenize, /detokenize). Every body must give a request or an ApiError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  (void)strata::server::parse_completion_request(body);
  (void)strata::server::parse_chat_request(body);
  (void)strata::server::parse_tokenize_request(body);
  (void)strata::server::parse_detokenize_request(body);
  return 0;
}
