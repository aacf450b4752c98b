// Encoding speed of the tokenizer on English prose, measured the way
// tools/tokenizer-oracle/bench.js measures the Hugging Face reference: the
// text cut into ~2 KB documents (lines joined until they exceed 2,000 bytes),
// each encoded in its own call without special tokens, on one thread.
//
//   STRATA_BENCH_TOKENIZER=path/tokenizer.json STRATA_BENCH_TEXT=prose.txt
//   build/release/bench/micro/tokenizer_bench
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace {

std::vector<std::string> documents(const std::string& text) {
  std::vector<std::string> docs;
  std::string current;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    current += line + "\n";
    if (current.size() > 2000) {
      docs.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) docs.push_back(current);
  return docs;
}

void BM_Encode(benchmark::State& state) {
  const char* tok_path = std::getenv("STRATA_BENCH_TOKENIZER");
  const char* text_path = std::getenv("STRATA_BENCH_TEXT");
  if (tok_path == nullptr || text_path == nullptr) {
    state.SkipWithError("set STRATA_BENCH_TOKENIZER and STRATA_BENCH_TEXT");
    return;
  }
  auto tok = strata::tokenizer::Tokenizer::from_json_file(tok_path);
  auto text = strata::read_file_to_string(text_path);
  if (!tok.ok() || !text.ok()) {
    state.SkipWithError("cannot load the tokenizer or the text");
    return;
  }
  const std::vector<std::string> docs = documents(*text);
  int64_t tokens = 0;
  for (auto _ : state) {
    for (const std::string& d : docs) tokens += tok->encode(d, false).size();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text->size()));
  state.counters["tokens"] = static_cast<double>(tokens) / state.iterations();
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
