// Fuzz target: GBNF grammar text (request-supplied grammars reach the parser
// directly), then a short constrained walk over a small byte vocabulary:
// masks must agree with per-token acceptance and accepting never crashes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"

namespace {

std::shared_ptr<const strata::structured::TokenVocabulary> fuzz_vocab() {
  static const auto vocab = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t : {"{\"", "\":", "ab", "\xC3\xA9", "\xE4\xBD", "  ", "\"}", "12"}) {
      tokens.push_back(t);
    }
    tokens.push_back("<eos>");
    const int32_t eos = static_cast<int32_t>(tokens.size()) - 1;
    return strata::structured::make_token_vocabulary(std::move(tokens), {eos}, {});
  }();
  return vocab;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using strata::structured::GrammarMatcher;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto compiled = strata::structured::compile_gbnf(text, fuzz_vocab());
  if (!compiled.ok()) return 0;
  GrammarMatcher m(*compiled);
  const int64_t v = m.vocab().size();
  std::vector<uint32_t> mask(static_cast<size_t>(GrammarMatcher::bitmask_words(v)));
  for (size_t step = 0; step < 8 && !m.is_terminated(); ++step) {
    m.fill_next_token_bitmask(mask);
    int32_t pick = -1;
    for (int32_t id = 0; id < v; ++id) {
      const bool allowed = (mask[id >> 5] >> (id & 31)) & 1;
      STRATA_CHECK(m.clone().accept_token(id) == allowed) << "mask disagrees at token " << id;
      // Deterministic choice from the input's bytes.
      if (allowed && (pick < 0 || (size > 0 && data[(step * 7 + id) % size] % 5 == 0))) pick = id;
    }
    if (pick < 0) break;
    STRATA_CHECK(m.accept_token(pick));
  }
  return 0;
}
