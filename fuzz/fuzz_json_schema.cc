// Fuzz target: the structured-output front ends (JSON Schema, regex and
// choice -> GBNF). Schemas and patterns come straight from API requests. The
// input is tried as a JSON Schema (compact and spaced), as a regex, and as a
// one-element choice; every grammar produced is then compiled by the GBNF
// engine over a byte vocabulary, which must not crash either (it may reject,
// e.g. a left-recursive `{"$ref": "#"}`).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "structured/builtin_grammars.h"
#include "structured/grammar_compiler.h"
#include "structured/json_schema.h"
#include "structured/regex_to_gbnf.h"
#include "structured/token_vocabulary.h"

namespace {

std::shared_ptr<const strata::structured::TokenVocabulary> byte_vocab() {
  std::vector<std::string> tokens;
  for (int byte = 0; byte < 256; ++byte) tokens.push_back(std::string(1, static_cast<char>(byte)));
  tokens.push_back("</s>");
  return strata::structured::make_token_vocabulary(tokens, {256}, {});
}

void compile(const strata::StatusOr<std::string>& gbnf) {
  static const auto vocab = byte_vocab();
  if (!gbnf.ok()) return;
  (void)strata::structured::compile_gbnf(*gbnf, vocab);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace st = strata::structured;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  compile(st::json_schema_to_gbnf(input, {.any_whitespace = false, .strict = false}));
  compile(st::json_schema_to_gbnf(input, {.any_whitespace = true, .strict = true}));
  compile(st::regex_to_gbnf(input));
  compile(st::choice_to_gbnf({std::string(input)}));
  return 0;
}
