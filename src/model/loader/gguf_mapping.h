// Presents a GGUF file the way Strata presents a Hugging Face checkpoint: a
// ModelConfig from the GGUF metadata and a WeightSource with Hugging Face
// tensor names, so the model code has one loading path.
//
// Supported general.architecture values: llama, qwen2, qwen3.
//
// Decisions the model code relies on:
//  - Shapes are row-major (GGUF dims reversed): blk.N.attn_q.weight becomes
//    model.layers.N.self_attn.q_proj.weight [q_dim, hidden], as in safetensors.
//  - llama: llama.cpp's converter permutes q/k rows so that rope rotates
//    adjacent pairs; the weights are kept as stored and the config says
//    rope_style = kInterleaved. qwen2/qwen3 are not permuted: kNeox.
//  - llama3 rope scaling arrives as the tensor rope_freqs.weight; it is read
//    into ModelConfig::rope_freq_factors (rope_inv_freq() applies it).
//  - tie_word_embeddings is true when output.weight is absent.
//  - Tensors with names outside the mapping keep their GGUF names.
//
// Operations: pure functions of a parsed GgufFile; any thread.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "model/loader/gguf.h"
#include "model/loader/weight_source.h"
#include "model/model_config.h"

namespace strata::model {

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight";
// nullopt for names outside the mapping.
std::optional<std::string> gguf_to_hf_name(const std::string& gguf_name);
// As above, plus a mixture-of-experts family's router and shared-expert
// tensors (ffn_gate_inp, ffn_*_shexp) under `spec`'s names. Stacked expert
// tensors (ffn_*_exps) are split per expert by gguf_weight_source.
std::optional<std::string> gguf_to_hf_name(const std::string& gguf_name,
                                           const ArchitectureSpec& spec);

// Config from <arch>.* and tokenizer.ggml.* metadata plus the tensor table
// (vocab size, tied embeddings, biases, rope_freqs), validated.
StatusOr<ModelConfig> gguf_model_config(const GgufFile& file);

// Every tensor of the file under its Hugging Face name; shares the mapping.
// Stacked expert tensors [num_experts, n, k] become one [n, k] view per expert
// ("model.layers.<l>.<block>.experts.<e>.<part>.weight").
StatusOr<WeightSource> gguf_weight_source(const GgufFile& file);

}  // namespace strata::model
