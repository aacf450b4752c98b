// The default per-step token budget (vLLM's --max-num-batched-tokens) for a
// model on this engine's CPU backend.
//
// A step runs every running request's next token plus prefill chunks of
// waiting prompts, up to the budget. A large budget prefills a wave of
// prompts that arrive together in one step: all of them wait for the whole
// wave before their first token, and every running stream stalls for that
// step. A small one prefills them one after another (the first answers after
// one prompt's worth of compute), but pays a step's fixed cost more often:
// one more read of the weights, sampling and the thread hand-offs.
//
// The default is the smallest budget whose prefill compute is at least
// kFixedCostShare⁻¹ (10) times that fixed cost, rounded up to a multiple of
// 256 and clamped to [256, 2048]. The fixed cost is counted in FLOP-
// equivalents: the weights' bytes times kFlopsPerByte (GEMM rate over read
// bandwidth, ~350 GFLOP/s against ~30 GB/s on the 2-core Zen 4 host of
// BENCHMARKS.md) plus kStepOverheadFlops (~3 ms there). Measured on that host
// (BENCHMARKS.md, "A per-step prefill budget"): Qwen2.5-0.5B BF16 gets 256
// (mean TTFT at 16 streams 9.6-9.8 s -> 4.9-5.0 s, throughput even or
// better than at 2048); bench-small (30M parameters) gets 512, where 256
// cost up to 18% of the throughput at 16 streams and 2048 nearly doubled its
// mean TTFT. (512 against 2048 there assumes the scheduler's rule that a
// prompt which fits a step whole is not split behind another prefill.)
//
// Pure function, any thread.
#pragma once

#include <cstdint>

namespace strata::engine {

inline constexpr double kFlopsPerByte = 12.0;
inline constexpr double kStepOverheadFlops = 1e9;
inline constexpr double kFixedCostShare = 0.1;
inline constexpr int64_t kStepTokenGrain = 256;    // the smallest auto budget, and its step
inline constexpr int64_t kMaxAutoStepTokens = 2048;

// prefill_flops_per_token: model::Model::prefill_flops_per_token();
// step_weight_bytes: the bytes of weights one step reads
// (model::Model::decode_weight_bytes()).
int64_t auto_max_num_batched_tokens(int64_t prefill_flops_per_token, int64_t step_weight_bytes);

}  // namespace strata::engine
