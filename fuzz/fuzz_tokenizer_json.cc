// Fuzz target: tokenizer.json loading (shipped in downloaded model repos),
// then encode and decode of a fixed string with the loaded tokenizer.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto tokenizer = strata::tokenizer::Tokenizer::from_json(json, "fuzz");
  if (!tokenizer.ok()) return 0;
  const auto& tok = tokenizer.value();
  const std::vector<int32_t> ids = tok.encode("Hello, wörld! 123 <|im_end|>\n\t  x", true);
  (void)tok.decode(ids, /*skip_special_tokens=*/false);
  (void)tok.decode(ids, /*skip_special_tokens=*/true);
  return 0;
}
