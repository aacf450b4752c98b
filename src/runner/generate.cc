#include "runner/generate.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>

namespace strata::runner {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Status validate_prompt(const model::Model& model, const std::vector<int32_t>& prompt,
                       int64_t max_tokens) {
  if (prompt.empty()) return invalid_argument("prompt is empty; give at least one token");
  const int64_t vocab = model.vocab_size();
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab) {
      return invalid_argument("prompt token " + std::to_string(i) + " has id " +
                              std::to_string(prompt[i]) + "; the vocabulary has " +
                              std::to_string(vocab) + " tokens");
    }
  }
  const int64_t limit = model.config().max_position_embeddings;
  const int64_t need = static_cast<int64_t>(prompt.size()) + max_tokens;
  if (limit > 0 && need > limit) {
    return out_of_range("prompt has " + std::to_string(prompt.size()) + " tokens and " +
                        std::to_string(max_tokens) + " more were requested; the model's " +
                        "context is " + std::to_string(limit) + " tokens");
  }
  return Status();
}

// generate and bench store KV in blocks of serving's default size, so the
// tools exercise the same block-table reads serving does.
constexpr int64_t kBlockSize = 16;

backend::KvMemoryHandle sequence_kv(const model::Model& model, backend::Backend& backend,
                                    int64_t num_positions, tensor::KvCacheDtype dtype) {
  return model.make_kv_memory(backend, (num_positions + kBlockSize - 1) / kBlockSize, kBlockSize,
                              dtype);
}

model::ForwardBatch sequence_batch(const int32_t* tokens, int64_t num_tokens, int64_t start,
                                   bool all_logits = false) {
  return model::ForwardBatch::single_sequence(tokens, num_tokens, start, kBlockSize, all_logits);
}

}  // namespace

StatusOr<GenerateResult> generate(const model::Model& model, const std::vector<int32_t>& prompt,
                                  const GenerateOptions& options, backend::Backend& backend) {
  STRATA_RETURN_IF_ERROR(validate_prompt(model, prompt, options.max_tokens));
  const int64_t vocab = model.vocab_size();
  const int64_t num_prompt = static_cast<int64_t>(prompt.size());
  backend::KvMemoryHandle kv =
      sequence_kv(model, backend, num_prompt + options.max_tokens, options.kv_dtype);
  int64_t num_computed = 0;
  sampling::Sampler sampler(options.sampling);
  GenerateResult result;

  // Prefill: logits of every prompt position only when the caller wants them.
  const int64_t prefill_rows = options.keep_all_logits ? num_prompt : 1;
  model::Workspace workspace = model.make_workspace(backend, num_prompt, prefill_rows);
  std::vector<float> logits(prefill_rows * vocab);
  auto start = std::chrono::steady_clock::now();
  model.forward(sequence_batch(prompt.data(), num_prompt, 0, options.keep_all_logits), *kv,
                workspace, logits.data(), backend);
  num_computed = num_prompt;
  result.prefill_seconds = seconds_since(start);
  if (options.keep_all_logits) result.logits = logits;
  const float* next = logits.data() + (prefill_rows - 1) * vocab;

  start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < options.max_tokens; ++step) {
    int32_t token = sampler.sample(next, vocab);
    result.output_ids.push_back(token);
    if (options.num_top_logprobs > 0) {
      result.top_logprobs.push_back(sampling::top_logprobs(next, vocab, options.num_top_logprobs));
    }
    const auto& stops = options.stop_token_ids;
    if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
      result.stopped_on_token = true;
      break;
    }
    if (step + 1 == options.max_tokens) break;
    logits.resize(vocab);
    model.forward(sequence_batch(&token, 1, num_computed), *kv, workspace, logits.data(), backend);
    ++num_computed;
    next = logits.data();
    if (options.keep_all_logits) result.logits.insert(result.logits.end(), next, next + vocab);
  }
  result.decode_seconds = seconds_since(start);
  result.num_logit_rows = static_cast<int64_t>(result.logits.size()) / vocab;
  return result;
}

BenchResult bench(const model::Model& model, int64_t num_prompt_tokens, int64_t num_gen_tokens,
                  int64_t depth, tensor::KvCacheDtype kv_dtype, backend::Backend& backend) {
  const int64_t vocab = model.vocab_size();
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> prompt(num_prompt_tokens);
  for (int32_t& t : prompt) t = pick(rng);
  backend::KvMemoryHandle kv = sequence_kv(model, backend, num_prompt_tokens, kv_dtype);
  model::Workspace workspace = model.make_workspace(backend, num_prompt_tokens, 1);
  std::vector<float> logits(vocab);
  BenchResult result;

  auto start = std::chrono::steady_clock::now();
  model.forward(sequence_batch(prompt.data(), num_prompt_tokens, 0), *kv, workspace, logits.data(),
                backend);
  result.prefill_tokens_per_s = num_prompt_tokens / seconds_since(start);

  // Like llama-bench's tg test, decoding starts from an empty context, or
  // (llama-bench -d) after `depth` context tokens, prefilled untimed.
  backend::KvMemoryHandle decode_kv = sequence_kv(model, backend, depth + num_gen_tokens, kv_dtype);
  if (depth > 0) {
    std::vector<int32_t> context(depth);
    for (int32_t& t : context) t = pick(rng);
    for (int64_t done = 0; done < depth; done += 512) {
      const int64_t n = std::min<int64_t>(512, depth - done);
      model.forward(sequence_batch(context.data() + done, n, done), *decode_kv, workspace,
                    logits.data(), backend);
    }
  }
  int32_t token = prompt[0];
  workspace.expert_load().clear();
  start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < num_gen_tokens; ++i) {
    model.forward(sequence_batch(&token, 1, depth + i), *decode_kv, workspace, logits.data(),
                  backend);
    token = sampling::argmax(logits.data(), vocab);
  }
  result.decode_tokens_per_s = num_gen_tokens / seconds_since(start);
  result.expert_load = workspace.expert_load();
  return result;
}

}  // namespace strata::runner
