// `strata generate`: one prompt, one continuation, with timing on stderr.
//   strata generate --model PATH --prompt TEXT | --prompt-ids 1,2,3
//                   [--max-tokens N] [--temperature T] [--seed S] [--json]
//                   [--dump-logits FILE] [--bench] [--kernel-calibration off|auto|force]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "backend/cpu_backend.h"
#include "base/cpu_features.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "flags.h"
#include "kernel_calibration_flag.h"
#include "model/layers/expert_load.h"
#include "model/loader/model_files.h"
#include "model/model.h"
#include "ops/kernel_calibration.h"
#include "ops/ops.h"
#include "runner/generate.h"
#include "tensor/kv_cache_dtype.h"
#include "text_codec.h"

namespace strata::app {
namespace {

struct GenerateFlags {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  int64_t max_tokens = 16;
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  int64_t seed = 0;
  bool json = false;
  bool ignore_eos = false;
  std::string dump_logits;
  bool bench = false;
  int64_t bench_prompt_tokens = 512;
  int64_t bench_gen_tokens = 128;
  int64_t bench_repetitions = 3;
  int64_t bench_depth = 0;
  int64_t threads = 0;
  std::string kv_cache_dtype = "auto";
  std::string kernel_calibration = "auto";
};

void register_flags(FlagSet& flags, GenerateFlags& f) {
  flags.add_string("model", &f.model, "model directory (Hugging Face layout) or .gguf file");
  flags.add_string("prompt", &f.prompt, "prompt text (tokenized with the model's tokenizer)");
  flags.add_string("prompt-ids", &f.prompt_ids, "prompt as comma-separated token ids");
  flags.add_int("max-tokens", &f.max_tokens, "tokens to generate");
  flags.add_double("temperature", &f.temperature, "sampling temperature; 0 = greedy");
  flags.add_int("top-k", &f.top_k, "keep the k most likely tokens; 0 = off");
  flags.add_double("top-p", &f.top_p, "nucleus sampling mass; 1 = off");
  flags.add_int("seed", &f.seed, "random seed for sampling");
  flags.add_bool("json", &f.json, "print prompt_ids, output_ids and top_logprobs as JSON");
  flags.add_bool("ignore-eos", &f.ignore_eos, "keep generating past end-of-sequence tokens");
  flags.add_string("dump-logits", &f.dump_logits,
                   "write every position's logits: int64 rows, int64 vocab, f32 data");
  flags.add_bool("bench", &f.bench, "measure prefill and decode tokens/s (pp512/tg128)");
  flags.add_int("bench-prompt-tokens", &f.bench_prompt_tokens, "prompt length for --bench");
  flags.add_int("bench-gen-tokens", &f.bench_gen_tokens, "decode steps for --bench");
  flags.add_int("bench-repetitions", &f.bench_repetitions, "repetitions for --bench");
  flags.add_int("bench-depth", &f.bench_depth,
                "for --bench: decode after this many context tokens (llama-bench -d)");
  flags.add_int("threads", &f.threads, "compute threads (default: all cores)");
  flags.add_string("kv-cache-dtype", &f.kv_cache_dtype,
                   "KV element type: auto (the weights' dtype), bfloat16, float16, float32, "
                   "fp8 (= fp8_e4m3), fp8_e5m2");
  add_kernel_calibration_flag(flags, &f.kernel_calibration);
}

Status write_logits(const std::string& path, const runner::GenerateResult& r, int64_t vocab) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return unavailable("cannot write " + path);
  int64_t header[2] = {r.num_logit_rows, vocab};
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  out.write(reinterpret_cast<const char*>(r.logits.data()),
            static_cast<std::streamsize>(r.logits.size() * sizeof(float)));
  return out ? Status() : unavailable("short write to " + path);
}

void print_json(const std::vector<int32_t>& prompt, const runner::GenerateResult& r) {
  std::ostringstream out;
  out << "{\"prompt_ids\":[";
  for (size_t i = 0; i < prompt.size(); ++i) out << (i ? "," : "") << prompt[i];
  out << "],\"output_ids\":[";
  for (size_t i = 0; i < r.output_ids.size(); ++i) out << (i ? "," : "") << r.output_ids[i];
  out << "],\"top_logprobs\":[";
  out.precision(9);
  for (size_t i = 0; i < r.top_logprobs.size(); ++i) {
    out << (i ? "," : "") << "[";
    for (size_t j = 0; j < r.top_logprobs[i].size(); ++j) {
      out << (j ? "," : "") << "[" << r.top_logprobs[i][j].first << ","
          << r.top_logprobs[i][j].second << "]";
    }
    out << "]";
  }
  out << "]}\n";
  std::fputs(out.str().c_str(), stdout);
}

int run_bench(const model::Model& model, const GenerateFlags& f, tensor::KvCacheDtype kv_dtype,
              ThreadPool& pool) {
  std::fprintf(stderr,
               "backend %s, %d threads, %.1f MB of weights read per decode step, KV cache %s\n",
               ops::cpu_backend_name(), pool.num_threads(), model.decode_weight_bytes() / 1e6,
               tensor::kv_cache_dtype_name(kv_dtype));
  for (int64_t rep = 0; rep < f.bench_repetitions; ++rep) {
    backend::CpuBackend backend(pool);
    runner::BenchResult r =
        runner::bench(model, f.bench_prompt_tokens, f.bench_gen_tokens, f.bench_depth, kv_dtype,
                      backend);
    const std::string depth =
        f.bench_depth > 0 ? " @ d" + std::to_string(f.bench_depth) : std::string();
    std::printf("pp%lld %.2f tokens/s  tg%lld%s %.2f tokens/s  (decode %.1f GB/s of weights)\n",
                static_cast<long long>(f.bench_prompt_tokens), r.prefill_tokens_per_s,
                static_cast<long long>(f.bench_gen_tokens), depth.c_str(), r.decode_tokens_per_s,
                r.decode_tokens_per_s * model.decode_weight_bytes() / 1e9);
    std::fflush(stdout);
    if (rep + 1 == f.bench_repetitions && !r.expert_load.empty()) {
      std::fprintf(stderr, "expert load over the tg%lld decode steps (routed rows per expert):\n%s",
                   static_cast<long long>(f.bench_gen_tokens),
                   model::format_balance(r.expert_load).c_str());
    }
  }
  return 0;
}

int fail(const Status& status) {
  std::fprintf(stderr, "strata generate: %s\n", status.message().c_str());
  return 1;
}

}  // namespace

int run_generate(const std::vector<std::string>& args) {
  GenerateFlags f;
  FlagSet flags("generate");
  register_flags(flags, f);
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

  auto load_start = std::chrono::steady_clock::now();
  StatusOr<std::string> located = locate_model(f.model);
  if (!located.ok()) return fail(located.status());
  StatusOr<model::ModelFiles> files = model::open_model(*located);
  if (!files.ok()) return fail(files.status());
  StatusOr<std::unique_ptr<model::Model>> loaded = model::Model::load(std::move(*files));
  if (!loaded.ok()) return fail(loaded.status());
  const model::Model& model = **loaded;
  double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  ThreadPool pool(f.threads > 0 ? static_cast<int>(f.threads) : num_hardware_threads());
  std::fprintf(stderr, "loaded %s in %.2f s (%lld parameters)\n", f.model.c_str(), load_s,
               static_cast<long long>(model.num_parameters()));
  StatusOr<tensor::KvCacheDtype> kv_dtype =
      tensor::parse_kv_cache_dtype(f.kv_cache_dtype, model.weight_dtype());
  if (!kv_dtype.ok()) return fail(kv_dtype.status());
  StatusOr<std::vector<std::string>> calibration = calibrate_kernels(f.kernel_calibration, pool);
  if (!calibration.ok()) return fail(calibration.status());
  // --bench: every shape class on stdout with the results; otherwise the
  // summary and any warnings on stderr.
  for (size_t i = 0; i < calibration->size(); ++i) {
    const std::string& line = (*calibration)[i];
    if (f.bench) {
      std::printf("%s\n", line.c_str());
    } else if (i == 0 || line.rfind("warning", 0) == 0) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  if (f.bench) return run_bench(model, f, *kv_dtype, pool);

  StatusOr<TextCodec> codec = TextCodec::for_model(model.files());
  if (!codec.ok()) return fail(codec.status());
  std::vector<int32_t> prompt;
  if (!f.prompt_ids.empty()) {
    StatusOr<std::vector<int32_t>> ids = parse_id_list(f.prompt_ids);
    if (!ids.ok()) return fail(ids.status());
    prompt = *ids;
  } else if (flags.was_set("prompt")) {
    StatusOr<std::vector<int32_t>> ids = codec->encode(f.prompt);
    if (!ids.ok()) return fail(ids.status());
    prompt = *ids;
  } else {
    return fail(invalid_argument("give --prompt TEXT or --prompt-ids 1,2,3"));
  }

  runner::GenerateOptions options;
  options.kv_dtype = *kv_dtype;
  options.max_tokens = f.max_tokens;
  options.sampling = {.temperature = f.temperature,
                      .top_k = f.top_k,
                      .top_p = f.top_p,
                      .seed = static_cast<uint64_t>(f.seed)};
  if (!f.ignore_eos) options.stop_token_ids = codec->eos_token_ids();
  options.num_top_logprobs = f.json ? 5 : 0;
  options.keep_all_logits = !f.dump_logits.empty();
  backend::CpuBackend backend(pool);
  StatusOr<runner::GenerateResult> result = runner::generate(model, prompt, options, backend);
  if (!result.ok()) return fail(result.status());
  if (!f.dump_logits.empty()) {
    if (Status s = write_logits(f.dump_logits, *result, model.vocab_size()); !s.ok()) {
      return fail(s);
    }
  }
  if (f.json) {
    print_json(prompt, *result);
  } else {
    std::printf("%s\n", codec->decode(result->output_ids).c_str());
  }
  const double decode_steps = std::max<double>(1.0, result->output_ids.size() - 1.0);
  std::fprintf(stderr, "prefill: %zu tokens, %.1f tokens/s; decode: %zu tokens, %.1f tokens/s\n",
               prompt.size(), prompt.size() / result->prefill_seconds, result->output_ids.size(),
               result->decode_seconds > 0 ? decode_steps / result->decode_seconds : 0.0);
  return 0;
}

}  // namespace strata::app
