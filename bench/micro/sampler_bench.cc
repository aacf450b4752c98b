// Per-token cost of the sampler on a Qwen-sized vocabulary (151,936), one
// call per iteration: greedy, plain temperature (the OpenAI default,
// temperature 1), top-p, top-k, the sampled token's logprob and the top 5. The
// argument is the logits' standard deviation: 3, or 30 as in the random-weight
// Qwen shape the serving benchmarks use (a spread where e^(x - max) is below
// f32's normal range in nearly every lane).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "sampling/sampler.h"

namespace {

constexpr int64_t kVocab = 151936;

std::vector<float> logits(int64_t sigma) {
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0.0f, static_cast<float>(sigma));
  std::vector<float> v(kVocab);
  for (float& f : v) f = n(rng);
  return v;
}

void run(benchmark::State& state, strata::sampling::SamplingParams p) {
  std::vector<float> l = logits(state.range(0));
  strata::sampling::Sampler s(p);
  for (auto _ : state) benchmark::DoNotOptimize(s.sample(l.data(), kVocab));
}

void BM_SampleGreedy(benchmark::State& state) {
  strata::sampling::SamplingParams p;
  p.temperature = 0.0;
  run(state, p);
}
void BM_SampleTemperature(benchmark::State& state) {
  strata::sampling::SamplingParams p;
  p.temperature = 1.0;
  run(state, p);
}
void BM_SampleTopP(benchmark::State& state) {
  strata::sampling::SamplingParams p;
  p.temperature = 0.8;
  p.top_p = 0.95;
  run(state, p);
}
void BM_SampleTopK(benchmark::State& state) {
  strata::sampling::SamplingParams p;
  p.temperature = 0.8;
  p.top_k = 40;
  run(state, p);
}
void BM_TokenLogprob(benchmark::State& state) {
  std::vector<float> l = logits(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(strata::sampling::token_logprob(l.data(), kVocab, 7));
}

void BM_TopLogprobs(benchmark::State& state) {
  std::vector<float> l = logits(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(strata::sampling::top_logprobs(l.data(), kVocab, 5));
}

BENCHMARK(BM_SampleGreedy)->Unit(benchmark::kMicrosecond)->Arg(3)->Arg(30);
BENCHMARK(BM_SampleTemperature)->Unit(benchmark::kMicrosecond)->Arg(3)->Arg(30);
BENCHMARK(BM_SampleTopP)->Unit(benchmark::kMicrosecond)->Arg(3)->Arg(30);
BENCHMARK(BM_SampleTopK)->Unit(benchmark::kMicrosecond)->Arg(3)->Arg(30);
BENCHMARK(BM_TokenLogprob)->Unit(benchmark::kMicrosecond)->Arg(3)->Arg(30);
BENCHMARK(BM_TopLogprobs)->Unit(benchmark::kMicrosecond)->Arg(3)->Arg(30);

}  // namespace

BENCHMARK_MAIN();
