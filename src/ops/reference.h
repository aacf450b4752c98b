// Plain scalar reference implementations of every op in ops/ops.h. They are
// the specification the optimized kernels (ops/cpu) are tested against:
// straightforward loops, f32 math (double accumulation for matmul), no
// threading. Slow; never used on the serving path.
//
// Threading: pure functions of their arguments; safe from any thread.
#pragma once

#include <cstdint>

#include "ops/ops.h"
#include "tensor/tensor_view.h"

namespace strata::ops::reference {

// y[m, n] = x[m, k] · w[n, k]ᵀ (+ bias[n]); w is any weight dtype (F32, F16,
// BF16, Q8_0, the low-bit GGUF types), widened exactly to f32; sums in double.
void matmul(const float* x, int64_t m, const tensor::TensorView& w, const float* bias, float* y);

// Same as matmul but x (and, if round_w, the widened weights) are first
// rounded to bf16 (round-to-nearest-even): the numerics of the bf16 kernels.
void matmul_bf16_rounded(const float* x, int64_t m, const tensor::TensorView& w, const float* bias,
                         bool round_w, float* y);

// Weights w [n, k] (k % 32 == 0; Q8_0, a low-bit GGUF type, or their f32
// values) with x quantized to int8 per x_block values first (the last block
// may end at k), as the VNNI decode kernels do (and llama.cpp: per 32 for
// its 32-value types and IQ4_XS, per 256 for the K-quants; cpu::lowbit_x_block()):
// d_x = max|x_block| / 127 kept in f32 (not rounded to f16),
// q_x = round-to-nearest-even(x * (1 / d_x)), saturated to int8;
// y = Σ_blocks d_x * Σ q_x w (+ bias), w dequantized exactly, summed in
// double. x must be finite.
void matmul_q8_activations(const float* x, int64_t m, const tensor::TensorView& w,
                           const float* bias, float* y, int64_t x_block = 32);

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y);
void rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
          int64_t head_dim, const float* inv_freq, RopeStyle style);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void softmax(float* x, int64_t n);
// ops::moe_route by sorting every expert (stable, so ties keep the lower id).
void moe_route(const float* logits, int64_t num_tokens, int64_t num_experts, int64_t top_k,
               bool renormalize, int32_t* experts, float* weights);
void add_inplace(float* y, const float* x, int64_t n);
void attention(const float* q, const float* k, const float* v, const AttentionShape& shape,
               float* out);

}  // namespace strata::ops::reference
