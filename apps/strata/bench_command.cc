// `strata bench throughput`: offline throughput of the engine (vLLM's
// `vllm bench throughput`): N random prompts of a fixed length, each generating
// a fixed number of tokens (EOS ignored), all submitted at once; reports
// requests/s and tokens/s. `--max-num-seqs 1` gives the batch-1 baseline.
// `strata bench serve` (online serving benchmark against any OpenAI-compatible
// server) and `strata bench plot` live in bench_serve_command.cc / bench_sweep.cc.
#include <chrono>
#include <cstdio>
#include <random>

#include "base/cpu_features.h"
#include "bench_serve.h"
#include "commands.h"
#include "engine/engine_core.h"
#include "flags.h"
#include "kernel_calibration_flag.h"
#include "model/loader/model_files.h"
#include "model/model.h"
#include "ops/kernel_calibration.h"
#include "ops/ops.h"

namespace strata::app {
namespace {

struct ThroughputFlags {
  std::string model;
  int64_t num_prompts = 64;
  int64_t input_len = 256;
  int64_t output_len = 128;
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 2048;
  int64_t kv_cache_memory = int64_t{2} << 30;
  int64_t block_size = 16;
  int64_t threads = 0;
  int64_t seed = 0;
  std::string kernel_calibration = "auto";
};

int fail(const Status& s) {
  std::fprintf(stderr, "strata bench throughput: %s\n", s.message().c_str());
  return 1;
}

std::vector<engine::EngineRequest> make_requests(const ThroughputFlags& f, int64_t vocab) {
  std::mt19937 rng(static_cast<uint32_t>(f.seed));
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab - 1));
  std::vector<engine::EngineRequest> requests;
  for (int64_t i = 0; i < f.num_prompts; ++i) {
    engine::EngineRequest r;
    r.request_id = "bench-" + std::to_string(i);
    for (int64_t t = 0; t < f.input_len; ++t) r.prompt_token_ids.push_back(pick(rng));
    r.sampling.temperature = 0.0;
    r.stop.max_tokens = f.output_len;
    r.stop.ignore_eos = true;
    requests.push_back(std::move(r));
  }
  return requests;
}

int run_throughput(const std::vector<std::string>& args) {
  ThroughputFlags f;
  FlagSet flags("bench throughput");
  flags.add_string("model", &f.model, "model directory or .gguf file");
  flags.add_int("num-prompts", &f.num_prompts, "number of requests");
  flags.add_int("input-len", &f.input_len, "prompt tokens per request");
  flags.add_int("output-len", &f.output_len, "generated tokens per request");
  flags.add_int("max-num-seqs", &f.max_num_seqs, "requests running at once (1 = batch-1 baseline)");
  flags.add_int("max-num-batched-tokens", &f.max_num_batched_tokens, "token budget per step");
  flags.add_int("kv-cache-memory", &f.kv_cache_memory, "KV cache bytes");
  flags.add_int("block-size", &f.block_size, "tokens per KV block");
  flags.add_int("threads", &f.threads, "compute threads (default: all cores)");
  flags.add_int("seed", &f.seed, "seed for the random prompts");
  add_kernel_calibration_flag(flags, &f.kernel_calibration);
  if (Status s = flags.parse(args); !s.ok()) return fail(s);
  if (flags.help_requested()) {
    std::fputs(flags.usage().c_str(), stdout);
    return 0;
  }
  if (f.model.empty()) f.model = default_model_path();
  if (f.model.empty()) {
    return fail(invalid_argument("no --model given and no bundled model (" +
                                 default_model_search_note() + ")"));
  }
  if (auto mode = ops::parse_calibration_mode(f.kernel_calibration); !mode.ok()) {
    return fail(mode.status());
  }
  StatusOr<std::string> located = locate_model(f.model);
  if (!located.ok()) return fail(located.status());
  StatusOr<model::ModelFiles> files = model::open_model(*located);
  if (!files.ok()) return fail(files.status());
  StatusOr<std::unique_ptr<model::Model>> model = model::Model::load(std::move(*files));
  if (!model.ok()) return fail(model.status());

  engine::EngineConfig config;
  config.block_size = f.block_size;
  config.kv_cache_memory_bytes = f.kv_cache_memory;
  config.scheduler.max_num_seqs = f.max_num_seqs;
  config.scheduler.max_num_batched_tokens = f.max_num_batched_tokens;
  config.scheduler.max_model_len = f.input_len + f.output_len;
  ThreadPool pool(f.threads > 0 ? static_cast<int>(f.threads) : num_hardware_threads());
  StatusOr<std::vector<std::string>> calibration = calibrate_kernels(f.kernel_calibration, pool);
  if (!calibration.ok()) return fail(calibration.status());
  for (const std::string& line : *calibration) std::fprintf(stderr, "%s\n", line.c_str());
  StatusOr<std::unique_ptr<engine::EngineCore>> core =
      engine::EngineCore::create(**model, config, pool);
  if (!core.ok()) return fail(core.status());
  for (engine::EngineRequest& r : make_requests(f, (*model)->vocab_size())) {
    if (Status s = (*core)->add_request(std::move(r)); !s.ok()) return fail(s);
  }
  const auto start = std::chrono::steady_clock::now();
  int64_t output_tokens = 0;
  while ((*core)->has_unfinished_requests()) {
    for (const engine::RequestOutput& out : (*core)->step()) {
      output_tokens += static_cast<int64_t>(out.new_tokens.size());
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const engine::EngineStats stats = (*core)->stats();
  std::printf(
      "backend %s, %d threads, max-num-seqs %lld: %lld requests in %.2f s\n"
      "  %.3f requests/s, %.1f output tokens/s, %.1f total tokens/s (%lld steps, %lld "
      "preemptions)\n",
      ops::cpu_backend_name(), pool.num_threads(), static_cast<long long>(f.max_num_seqs),
      static_cast<long long>(f.num_prompts), seconds, f.num_prompts / seconds,
      output_tokens / seconds, (output_tokens + f.num_prompts * f.input_len) / seconds,
      static_cast<long long>(stats.num_steps), static_cast<long long>(stats.num_preemptions));
  return 0;
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  const std::string sub = args.empty() ? "" : args[0];
  const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (sub == "throughput") return run_throughput(rest);
  if (sub == "serve") return run_serve_bench(rest);
  if (sub == "plot") return run_bench_plot(rest);
  std::fprintf(stderr,
               "usage: strata bench throughput [flags]   offline engine throughput\n"
               "       strata bench serve [flags]        serving benchmark against an "
               "OpenAI-compatible server\n"
               "       strata bench plot SWEEP.json... --output FILE.png\n"
               "(--help after a sub-command lists its flags)\n");
  return 2;
}

}  // namespace strata::app
