#!/usr/bin/python3
"""Write tiny random-weight Hugging Face model directories for golden tests.

Usage:
  make_checkpoint.py --arch llama|llama-tied|qwen2|qwen3|mistral|qwen3-moe|qwen2-moe|mixtral
                     --dtype f32|f16|bf16
                     --out DIR [--seed N] [--shards N]
                     [--shape tiny|all-sparse|k256|k320|qwen2.5-0.5b|qwen2.5-0.5b-draft|
                              bench-small|qwen3-moe-bench|qwen2-moe-bench]

Each directory holds config.json, generation_config.json, model.safetensors (or
model-0000k-of-0000N.safetensors + model.safetensors.index.json with --shards),
tokenizer.json and tokenizer_config.json (small but valid, so llama.cpp's
converter accepts the directory).

Weights are generated in float32 from a per-tensor seed (seed, tensor name), then
rounded to the requested dtype, so the f32, f16 and bf16 variants of one seed are
the same model up to storage rounding. Initialisation is chosen so next-token
distributions are peaked (embedding std 1, lm_head scaled up): greedy paths then
have clear top-1/top-2 margins (the golden test asserts the margin).

Mixture-of-experts archs (qwen3-moe, qwen2-moe, mixtral; untied, like the published models)
also get a planted, token-determined routing so that no top-k choice is near a tie (f32 vs
f64 vs bf16 rounding cannot flip it): each MoE layer owns num_experts hidden dimensions
("routing dims"); the embedding of token t holds a code there, graded values ROUTE_LEVELS
on the k experts chosen for t and small noise (|.| <= ~1) on the others; the router row of
expert e is ROUTER_GAIN on its routing dim plus small noise, attention / MLP / expert
outputs write only 0.1x into routing dims, and the layer's post_attention_layernorm weight is
close to 1 there. The router logits of a token are then dominated by its code, with a gap of
~3 logits between the k-th and (k+1)-th expert (checked by --check-routing, default on).
The planted bigram of the last layer lives in the primary (highest-code) expert of each token.
"""
import argparse
import json
import math
import os
import sys
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from st_io import write_safetensors  # noqa: E402

DTYPE_NAMES = {"f32": ("F32", torch.float32, "float32"),
               "f16": ("F16", torch.float16, "float16"),
               "bf16": ("BF16", torch.bfloat16, "bfloat16")}

# Tiny shapes: hidden 64-96, 2-3 layers, GQA with 2 kv heads, small vocab.
TINY = {
    "llama": dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=320, vocab=320),
    "llama-tied": dict(hidden=96, layers=3, heads=6, kv_heads=2, head_dim=16, ffn=384,
                       vocab=384),
    "qwen2": dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=352, vocab=352),
    "qwen3": dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=32, ffn=320, vocab=320),
    "mistral": dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=320, vocab=320),
    # MoE: experts / top_k / moe_ffn (each expert's intermediate size); qwen3-moe's layer 0 is
    # dense (mlp_only_layers, intermediate_size ffn); qwen2-moe has a shared expert (shared_ffn)
    # and top-4 without renormalisation; mixtral's intermediate_size is the expert size.
    "qwen3-moe": dict(hidden=64, layers=3, heads=4, kv_heads=2, head_dim=32, ffn=320, vocab=320,
                      experts=8, top_k=2, moe_ffn=48, mlp_only_layers=[0]),
    "qwen2-moe": dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=352, vocab=352,
                      experts=8, top_k=4, moe_ffn=48, shared_ffn=96, mlp_only_layers=[]),
    "mixtral": dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=48, vocab=320,
                    experts=8, top_k=2, moe_ffn=48, mlp_only_layers=[]),
}
MOE_ARCHS = ("qwen3-moe", "qwen2-moe", "mixtral")
# "all-sparse": an MoE arch's tiny shape with every layer sparse (mlp_only_layers []).
# llama.cpp's converter has no dense-layer variant for qwen3moe, so the GGUF golden cases
# of Qwen3-MoE use this shape (planted routing and bigram as in tiny).
SPARSE_SHAPE = "all-sparse"
# Planted routing (see the module docstring): code values of a token's chosen experts, in
# order (primary first), the router gain on the routing dim, the noise of unchosen codes.
ROUTE_LEVELS = [5.0, 4.4, 3.8, 3.2]
ROUTER_GAIN = 2.0
ROUTE_NOISE = 0.3
ROUTE_WRITE_SCALE = 0.1
# The planted bigram of a MoE layer is scaled by the primary expert's routing weight (~0.5-0.7
# with these levels), so its down projection gets this extra gain.
MOE_PLANT_BOOST = float(os.environ.get("STRATA_MOE_PLANT_BOOST", "3.0"))
# Token ids [NORMAL_LO, vocab - NORMAL_HI_PAD) are ordinary tokens: prompts are drawn from
# them and the planted bigram map (below) stays inside them, so greedy never emits a
# special token (no early EOS).
NORMAL_LO, NORMAL_HI_PAD = 3, 8
PLANT_GAIN = float(os.environ.get("STRATA_PLANT_GAIN", "3.0"))
# Qwen2.5-0.5B's shape, for benchmarks only (~1 GB in bf16).
QWEN25_05B = dict(hidden=896, layers=24, heads=14, kv_heads=2, head_dim=64, ffn=4864,
                  vocab=151936)
# A ~30M-parameter Qwen2 for serving benchmarks that must finish in minutes on two
# cores yet make prefill cost far more than a KV reload (16 KiB of KV per token).
BENCH_SMALL = dict(hidden=512, layers=8, heads=8, kv_heads=4, head_dim=64, ffn=1536,
                   vocab=8192)
# A Qwen3-MoE scaled to this machine, for benchmarks only: 32 experts, top-4, ~0.9B
# parameters of which ~0.18B are read per token (bf16 ~1.8 GB). Its routers are random
# (no planted routing): the load spreads over the experts as a trained router's roughly does.
QWEN3_MOE_BENCH = dict(hidden=1024, layers=16, heads=16, kv_heads=4, head_dim=64, ffn=3072,
                       vocab=32000, experts=32, top_k=4, moe_ffn=512, mlp_only_layers=[])
# qwen3-moe-bench plus a shared expert 4x an expert's width (Qwen1.5-MoE's ratio).
QWEN2_MOE_BENCH = dict(QWEN3_MOE_BENCH, shared_ffn=2048)
# A draft model for qwen2.5-0.5b (speculative decoding benchmarks): the same vocabulary,
# ~42M parameters (11.7x fewer; 38.9M of them the tied embedding / lm_head).
QWEN25_05B_DRAFT = dict(hidden=256, layers=4, heads=4, kv_heads=2, head_dim=64, ffn=768,
                        vocab=151936)
SHAPES = {"qwen2.5-0.5b": QWEN25_05B, "qwen2.5-0.5b-draft": QWEN25_05B_DRAFT,
          "bench-small": BENCH_SMALL,
          "qwen3-moe-bench": QWEN3_MOE_BENCH, "qwen2-moe-bench": QWEN2_MOE_BENCH}
# The arch each bench shape is written for.
BENCH_ARCH = {"qwen3-moe-bench": "qwen3-moe", "qwen2-moe-bench": "qwen2-moe"}
# Small golden shapes for llama.cpp's quantized types (any arch, bigram planted like TINY).
# k256: every matmul's input length (hidden 256, heads*head_dim 256, ffn 512) is a multiple
# of 256, so K-quants and IQ4_XS apply to every tensor. k320: hidden 320 is not (like
# Qwen2.5-0.5B's 896) while ffn 768 is, so one file mixes the K-quant of ffn_down with
# llama.cpp's fallbacks (Q5_0 / Q5_1 / Q8_0 / IQ4_NL) everywhere else; 5 query heads on 1 KV
# head (GQA 5 >= 4, which changes IQ4_XS's attn_v rule).
QUANT_SHAPES = {
    "k256": dict(hidden=256, layers=2, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=512),
    "k320": dict(hidden=320, layers=2, heads=5, kv_heads=1, head_dim=64, ffn=768, vocab=512),
}


def hf_config(arch, s, dtype_name):
    common = {
        "hidden_size": s["hidden"], "intermediate_size": s["ffn"],
        "num_hidden_layers": s["layers"], "num_attention_heads": s["heads"],
        "num_key_value_heads": s["kv_heads"], "head_dim": s["head_dim"],
        "vocab_size": s["vocab"], "hidden_act": "silu", "initializer_range": 0.02,
        "torch_dtype": dtype_name, "use_cache": True, "attention_dropout": 0.0,
    }
    if arch in ("llama", "llama-tied"):
        c = dict(architectures=["LlamaForCausalLM"], model_type="llama",
                 max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=10000.0,
                 attention_bias=False, mlp_bias=False, pretraining_tp=1,
                 bos_token_id=1, eos_token_id=2)
        if arch == "llama":
            # original_max_position_embeddings 64 with head_dim 16 and theta 1e4 puts
            # frequency 0 in the unchanged band, 1-2 in the smoothed band and 3-7 in
            # the band divided by factor: all three llama3 branches are exercised.
            c["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 64}
            c["tie_word_embeddings"] = False
        else:
            c["rope_scaling"] = None
            c["tie_word_embeddings"] = True
    elif arch == "qwen2":
        # A small sliding_window with use_sliding_window false: an engine must ignore
        # it (transformers and llama.cpp both do).
        c = dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2",
                 max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0,
                 sliding_window=16, use_sliding_window=False, max_window_layers=1,
                 tie_word_embeddings=True, bos_token_id=s["vocab"] - 8,
                 eos_token_id=s["vocab"] - 8, rope_scaling=None)
    elif arch == "qwen3":
        c = dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3",
                 max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0,
                 attention_bias=False, sliding_window=None, use_sliding_window=False,
                 max_window_layers=s["layers"], tie_word_embeddings=True,
                 bos_token_id=s["vocab"] - 8, eos_token_id=s["vocab"] - 6,
                 rope_scaling=None)
    elif arch == "mistral":
        c = dict(architectures=["MistralForCausalLM"], model_type="mistral",
                 max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=10000.0,
                 sliding_window=16, tie_word_embeddings=False, bos_token_id=1,
                 eos_token_id=2)
    elif arch == "qwen3-moe":
        c = dict(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe",
                 max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0,
                 attention_bias=False, sliding_window=None, use_sliding_window=False,
                 max_window_layers=s["layers"], tie_word_embeddings=False,
                 bos_token_id=s["vocab"] - 8, eos_token_id=s["vocab"] - 6, rope_scaling=None,
                 decoder_sparse_step=1, mlp_only_layers=s["mlp_only_layers"],
                 moe_intermediate_size=s["moe_ffn"], num_experts=s["experts"],
                 num_experts_per_tok=s["top_k"], norm_topk_prob=True,
                 output_router_logits=False, router_aux_loss_coef=0.001)
    elif arch == "qwen2-moe":
        # Qwen2MoeAttention (transformers 4.46) requires head_dim * heads == hidden.
        assert s["head_dim"] * s["heads"] == s["hidden"]
        c = dict(architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe",
                 max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=1000000.0,
                 sliding_window=16, use_sliding_window=False, max_window_layers=s["layers"],
                 tie_word_embeddings=False, bos_token_id=s["vocab"] - 8,
                 eos_token_id=s["vocab"] - 8, rope_scaling=None,
                 decoder_sparse_step=1, mlp_only_layers=s["mlp_only_layers"],
                 moe_intermediate_size=s["moe_ffn"],
                 shared_expert_intermediate_size=s["shared_ffn"], num_experts=s["experts"],
                 num_experts_per_tok=s["top_k"], norm_topk_prob=False,
                 output_router_logits=False, router_aux_loss_coef=0.001)
    elif arch == "mixtral":
        c = dict(architectures=["MixtralForCausalLM"], model_type="mixtral",
                 max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=1000000.0,
                 sliding_window=None, tie_word_embeddings=False, bos_token_id=1,
                 eos_token_id=2, num_local_experts=s["experts"],
                 num_experts_per_tok=s["top_k"], output_router_logits=False,
                 router_aux_loss_coef=0.02, router_jitter_noise=0.0)
    else:
        raise ValueError(arch)
    c.update(common)
    return dict(sorted(c.items()))


def tensor_specs(arch, s):
    """name -> (shape, kind). kind selects the initialiser."""
    H, F, V, D = s["hidden"], s["ffn"], s["vocab"], s["head_dim"]
    nq, nkv = s["heads"], s["kv_heads"]
    specs = {"model.embed_tokens.weight": ((V, H), "embed"),
             "model.norm.weight": ((H,), "norm")}
    tied = arch in ("llama-tied", "qwen2", "qwen3")
    if not tied:
        specs["lm_head.weight"] = ((V, H), "lm_head")
    for i in range(s["layers"]):
        p = f"model.layers.{i}."
        specs[p + "input_layernorm.weight"] = ((H,), "norm")
        specs[p + "post_attention_layernorm.weight"] = ((H,), "norm")
        specs[p + "self_attn.q_proj.weight"] = ((nq * D, H), "qk")
        specs[p + "self_attn.k_proj.weight"] = ((nkv * D, H), "qk")
        specs[p + "self_attn.v_proj.weight"] = ((nkv * D, H), "proj")
        specs[p + "self_attn.o_proj.weight"] = ((H, nq * D), "proj")
        if i in moe_layers(arch, s):
            E, Fe = s["experts"], s["moe_ffn"]
            if arch == "mixtral":
                specs[p + "block_sparse_moe.gate.weight"] = ((E, H), "router")
                for e in range(E):
                    q = p + f"block_sparse_moe.experts.{e}."
                    specs[q + "w1.weight"] = ((Fe, H), "proj")
                    specs[q + "w3.weight"] = ((Fe, H), "proj")
                    specs[q + "w2.weight"] = ((H, Fe), "proj")
            else:
                specs[p + "mlp.gate.weight"] = ((E, H), "router")
                for e in range(E):
                    q = p + f"mlp.experts.{e}."
                    specs[q + "gate_proj.weight"] = ((Fe, H), "proj")
                    specs[q + "up_proj.weight"] = ((Fe, H), "proj")
                    specs[q + "down_proj.weight"] = ((H, Fe), "proj")
                if s.get("shared_ffn"):
                    Fs = s["shared_ffn"]
                    specs[p + "mlp.shared_expert.gate_proj.weight"] = ((Fs, H), "proj")
                    specs[p + "mlp.shared_expert.up_proj.weight"] = ((Fs, H), "proj")
                    specs[p + "mlp.shared_expert.down_proj.weight"] = ((H, Fs), "proj")
                    specs[p + "mlp.shared_expert_gate.weight"] = ((1, H), "proj")
        else:
            specs[p + "mlp.gate_proj.weight"] = ((F, H), "proj")
            specs[p + "mlp.up_proj.weight"] = ((F, H), "proj")
            specs[p + "mlp.down_proj.weight"] = ((H, F), "proj")
        if arch in ("qwen2", "qwen2-moe"):
            specs[p + "self_attn.q_proj.bias"] = ((nq * D,), "bias")
            specs[p + "self_attn.k_proj.bias"] = ((nkv * D,), "bias")
            specs[p + "self_attn.v_proj.bias"] = ((nkv * D,), "bias")
        if arch in ("qwen3", "qwen3-moe"):
            specs[p + "self_attn.q_norm.weight"] = ((D,), "norm")
            specs[p + "self_attn.k_norm.weight"] = ((D,), "norm")
    return specs


def moe_layers(arch, s):
    """Indices of the sparse-MoE layers, by transformers' rule (Qwen2/3-MoE decoder layer:
    not in mlp_only_layers, num_experts > 0 and (layer + 1) % decoder_sparse_step == 0)."""
    if arch not in MOE_ARCHS:
        return []
    return [i for i in range(s["layers"]) if i not in s.get("mlp_only_layers", [])]


class RoutingPlan:
    """The planted routing of a MoE checkpoint (module docstring): per MoE layer its routing
    dims, each token's chosen experts (primary first) and, for ordinary tokens, the unit of
    the primary expert that carries the token's planted bigram."""

    def __init__(self, arch, s, seed):
        H, V, E, k = s["hidden"], s["vocab"], s["experts"], s["top_k"]
        self.layers = moe_layers(arch, s)
        assert E * len(self.layers) <= H // 2, "not enough hidden dims for routing"
        assert k <= len(ROUTE_LEVELS)
        self.dims, self.chosen, self.unit = {}, {}, {}
        lo, hi = NORMAL_LO, V - NORMAL_HI_PAD
        for b, layer in enumerate(self.layers):
            self.dims[layer] = list(range(H - E * (b + 1), H - E * b))
            g = torch.Generator().manual_seed(seed * 104729 + 31 * layer + 7)
            chosen = torch.zeros(V, k, dtype=torch.long)
            unit = torch.full((V,), -1, dtype=torch.long)
            order = (torch.randperm(hi - lo, generator=g) + lo).tolist()
            primary = {}
            for r, t in enumerate(order):  # balanced: each expert is primary of ~n/E tokens
                primary[t] = r % E
                unit[t] = r // E
            for t in range(V):
                first = primary.get(t, int(torch.randint(E, (1,), generator=g)))
                rest = [e for e in torch.randperm(E, generator=g).tolist() if e != first]
                chosen[t] = torch.tensor([first] + rest[:k - 1])
            self.chosen[layer], self.unit[layer] = chosen, unit
        self.all_dims = sorted(d for ds in self.dims.values() for d in ds)


def embedding(shape, seed, plan):
    """The embedding matrix (std 1); with a routing plan, routing dims hold the codes."""
    e = _randn("model.embed_tokens.weight", shape, seed)
    if plan is None:
        return e
    for layer, dims in plan.dims.items():
        code = ROUTE_NOISE * _randn(f"route.{layer}", (shape[0], len(dims)), seed)
        for j in range(plan.chosen[layer].shape[1]):
            code[torch.arange(shape[0]), plan.chosen[layer][:, j]] = ROUTE_LEVELS[j]
        e[:, dims] = code
    return e


def random_part(e, plan):
    """The embedding without its routing dims (what the planted bigram and lm_head use)."""
    if plan is None:
        return e
    e = e.clone()
    e[:, plan.all_dims] = 0
    return e


def _randn(name, shape, seed):
    g = torch.Generator().manual_seed((seed * 1000003 + zlib.crc32(name.encode())) % (2**63))
    return torch.randn(*shape, generator=g, dtype=torch.float32)


def bigram_map(vocab, seed):
    """The planted next-token map: a fixed permutation of the ordinary token ids."""
    lo, hi = NORMAL_LO, vocab - NORMAL_HI_PAD
    g = torch.Generator().manual_seed(seed * 7919 + 17)
    perm = torch.randperm(hi - lo, generator=g) + lo
    return list(range(lo, hi)), perm.tolist()


def make_tensor(name, shape, kind, seed, lm_scale, plant=None, plan=None):
    """float32 values of one tensor.

    plant (tiny models): (vocab, hidden, last_layer). The last layer's MLP gets a planted
    bigram lookup on top of 0.3x its random weights: unit j (one per ordinary token t_j)
    fires on embedding(t_j) through gate/up and writes embedding(pi(t_j)) through down.
    Untied lm_heads are embedding-aligned (plus noise). Next-token distributions are then
    peaked at pi(current token) with large top-1/top-2 margins, while every weight still
    contributes to the logits the golden tests compare.

    plan (MoE archs): the RoutingPlan. The embedding carries the routing codes, routers read
    the routing dims, writes into the residual stream are 0.1x there, and the last layer's
    bigram units sit in each token's primary expert (unit plan.unit[t] of expert
    plan.chosen[t][0]); unit vectors and lm_head use the embedding without its routing dims."""
    x = _randn(name, shape, seed)
    if kind == "embed":
        return embedding(shape, seed, plan)  # std 1 (+ routing codes)
    if kind == "norm":
        w = 1.0 + 0.25 * x
        if plan is not None and name.endswith("post_attention_layernorm.weight"):
            layer = int(name.split(".")[2])
            if layer in plan.dims:  # close to 1 on the layer's routing dims
                w[plan.dims[layer]] = 1.0 + 0.05 * x[plan.dims[layer]]
        return w
    if kind == "bias":
        return 0.5 * x
    fan_in = shape[-1]
    if kind == "qk":
        return x * (1.5 / math.sqrt(fan_in))  # sharper attention than uniform
    if kind == "router":  # [experts, hidden]
        if plan is None:  # benchmark shapes: a random router
            return x * (1.0 / math.sqrt(fan_in))
        layer = int(name.split(".")[2])
        w = 0.02 * x
        w[torch.arange(shape[0]), plan.dims[layer]] += ROUTER_GAIN
        return w
    if kind == "lm_head":
        if plant is None:
            return x * (lm_scale / math.sqrt(fan_in))
        e = random_part(embedding(shape, seed, plan), plan)
        w = (e + 0.5 * x) * (lm_scale / math.sqrt(fan_in))
        if plan is not None:
            w[:, plan.all_dims] *= ROUTE_WRITE_SCALE
        return w
    if kind == "proj":
        w = x * (1.0 / math.sqrt(fan_in))
        writes = name.endswith(("o_proj.weight", "down_proj.weight", ".w2.weight"))
        if plan is not None and writes:  # [hidden, *]: small writes into routing dims
            w[plan.all_dims] *= ROUTE_WRITE_SCALE
        if plant is None or not name.startswith(f"model.layers.{plant[2]}."):
            return w
        parts = name.split(".")
        if parts[3] not in ("mlp", "block_sparse_moe") or "shared_expert" in name \
                or name.endswith("shared_expert_gate.weight"):
            return w
        vocab, hidden = plant[0], plant[1]
        e = random_part(embedding((vocab, hidden), seed, plan), plan)
        unit = e / e.norm(dim=1, keepdim=True)
        src, dst = bigram_map(vocab, seed)
        src, dst = torch.tensor(src), torch.tensor(dst)
        gain = PLANT_GAIN
        if parts[4] == "experts":  # MoE: only the tokens whose primary expert this is
            layer, expert = int(parts[2]), int(parts[5])
            mine = plan.chosen[layer][src, 0] == expert
            rows = plan.unit[layer][src[mine]]
            src, dst = src[mine], dst[mine]
            gain = PLANT_GAIN * MOE_PLANT_BOOST
        else:
            rows = torch.arange(len(src))
        w = 0.3 * w
        if name.endswith(("down_proj.weight", ".w2.weight")):  # [hidden, ffn]
            w[:, rows] += gain * unit[dst].T
        else:  # gate/up [ffn, hidden]
            w[rows, :] += unit[src]
        return w
    raise ValueError(kind)


# ---------------------------------------------------------------- tokenizers

def bytes_to_unicode():
    """GPT-2's byte -> printable unicode char table (the byte-level BPE alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def pair_merges(alphabet, count):
    """`count` merges of two alphabet symbols, deterministic order."""
    merges = []
    for a in alphabet:
        for b in alphabet:
            if len(merges) == count:
                return merges
            merges.append((a, b))
    return merges


def llama_tokenizer(vocab_size):
    """Llama-2 style: SentencePiece BPE with byte fallback."""
    specials = ["<unk>", "<s>", "</s>"]
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    alphabet = ["▁"] + list("etaoinshrdlucmfwypvbgkjqxz")
    for ch in alphabet:
        vocab[ch] = len(vocab)
    merges = pair_merges(alphabet, vocab_size - len(vocab))
    for a, b in merges:
        vocab[a + b] = len(vocab)
    assert len(vocab) == vocab_size
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(specials)]
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
                                                      "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }
    cfg = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
           "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None,
           "clean_up_tokenization_spaces": False, "legacy": True,
           "model_max_length": 512, "tokenizer_class": "LlamaTokenizer",
           "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                    for a in added}}
    return tok, cfg


QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def qwen_tokenizer(vocab_size):
    """Qwen2-style byte-level BPE; 3 special tokens, then 5 unused ids up to vocab_size."""
    b2u = bytes_to_unicode()
    alphabet = [b2u[b] for b in range(256)]
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    n_base = vocab_size - 8
    first = list(b" etaoinshrdlu")
    common = [b2u[b] for b in first + [b for b in range(33, 127) if b not in first]]
    merges = pair_merges(common, n_base - 256)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    assert len(vocab) == n_base, (len(vocab), n_base)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    added = [{"id": n_base + i, "content": t, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i, t in enumerate(specials)]
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN_PATTERN}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
             "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False,
                           "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                    "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    template = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
                "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
    cfg = {"add_bos_token": False, "add_prefix_space": False, "bos_token": None,
           "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
           "errors": "replace", "model_max_length": 32768, "split_special_tokens": False,
           "tokenizer_class": "Qwen2Tokenizer", "clean_up_tokenization_spaces": False,
           "chat_template": template,
           "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                    for a in added}}
    return tok, cfg


# ---------------------------------------------------------------- writing

def shard_groups(names, sizes, num_shards):
    total = sum(sizes[n] for n in names)
    groups, cur, acc = [], [], 0
    for n in names:
        cur.append(n)
        acc += sizes[n]
        if acc >= total * (len(groups) + 1) / num_shards and len(groups) < num_shards - 1:
            groups.append(cur)
            cur = []
    groups.append(cur)
    assert len(groups) == num_shards and all(groups), "too many shards for this model"
    return groups


def write_checkpoint(arch, dtype, out, seed, shards, shape, lm_scale):
    s = SHAPES.get(shape) or QUANT_SHAPES.get(shape) or TINY[arch]
    if shape == SPARSE_SHAPE:
        s = dict(TINY[arch], mlp_only_layers=[])
    st_name, tdtype, hf_name = DTYPE_NAMES[dtype]
    os.makedirs(out, exist_ok=True)
    config = hf_config(arch, s, hf_name)
    specs = tensor_specs(arch, s)

    plant = None
    plan = RoutingPlan(arch, s, seed) if arch in MOE_ARCHS and shape not in SHAPES else None
    if shape in ("tiny", SPARSE_SHAPE) or shape in QUANT_SHAPES:
        if plan is not None and s["layers"] - 1 in plan.layers:
            assert s["moe_ffn"] > int(plan.unit[s["layers"] - 1].max())
        else:
            assert s["ffn"] >= s["vocab"] - NORMAL_LO - NORMAL_HI_PAD
        plant = (s["vocab"], s["hidden"], s["layers"] - 1)

    def producer(name, shp, kind):
        return lambda: make_tensor(name, shp, kind, seed, lm_scale, plant, plan).to(tdtype)

    tensors = {n: (st_name, shp, producer(n, shp, kind)) for n, (shp, kind) in specs.items()}
    elem = {"F32": 4, "F16": 2, "BF16": 2}[st_name]
    sizes = {n: elem * math.prod(shp) for n, (shp, _) in specs.items()}
    for f in os.listdir(out):
        if f.endswith(".safetensors") or f.endswith(".index.json"):
            os.remove(os.path.join(out, f))
    if shards <= 1:
        write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    else:
        weight_map = {}
        groups = shard_groups(sorted(tensors), sizes, shards)
        for k, group in enumerate(groups):
            fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
            write_safetensors(os.path.join(out, fname), {n: tensors[n] for n in group})
            weight_map.update({n: fname for n in group})
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": sum(sizes.values())},
                       "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)

    if arch in ("qwen2", "qwen3", "qwen2-moe", "qwen3-moe"):
        tok, tok_cfg = qwen_tokenizer(min(s["vocab"], 4096))
        eos = [s["vocab"] - 6, s["vocab"] - 8]
        gen = {"bos_token_id": s["vocab"] - 8, "eos_token_id": eos, "do_sample": True,
               "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05}
        if shape in SHAPES:
            # Specials sit at the end of the tokenizer, not of the padded vocab.
            n_tok = 4096
            eos = [n_tok - 6, n_tok - 8]
            gen.update(bos_token_id=n_tok - 8, eos_token_id=eos)
            config.update(bos_token_id=n_tok - 8, eos_token_id=n_tok - 6)
    else:
        tok, tok_cfg = llama_tokenizer(s["vocab"])
        gen = {"bos_token_id": 1, "eos_token_id": [2], "do_sample": True, "temperature": 0.6,
               "top_p": 0.9}
    gen["transformers_version"] = "4.46.0"
    config["transformers_version"] = "4.46.0"
    for fname, obj in (("config.json", config), ("generation_config.json", gen),
                       ("tokenizer.json", tok), ("tokenizer_config.json", tok_cfg)):
        with open(os.path.join(out, fname), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False)
            f.write("\n")


MIN_ROUTE_GAP = 1.0  # logits between the k-th and (k+1)-th expert, on every token


def check_routing(out, seed):
    """Every token id once (shuffled, seeded) through the reference: the k-th/(k+1)-th router
    logit gap must be >= MIN_ROUTE_GAP at every MoE layer and position, so no f32/bf16
    rounding can flip a top-k choice. Returns the smallest (abs gap, relative gap)."""
    import reference as R
    m = R.load_model(out).to(torch.float64)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randperm(m.vocab, generator=g).tolist()
    worst = (math.inf, math.inf)
    for layer, gap, rel in R.route_margins(m, ids):
        worst = (min(worst[0], float(gap.min())), min(worst[1], float(rel.min())))
    if worst[0] < MIN_ROUTE_GAP:
        raise SystemExit(f"{out}: router top-k gap {worst[0]:.3f} < {MIN_ROUTE_GAP}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", required=True, choices=sorted(TINY))
    ap.add_argument("--dtype", default="f32", choices=sorted(DTYPE_NAMES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--shape", default="tiny",
                    choices=["tiny", SPARSE_SHAPE] + sorted(QUANT_SHAPES) + sorted(SHAPES))
    ap.add_argument("--lm-scale", type=float, default=6.0,
                    help="std of lm_head logits (untied models); tied models use the embedding")
    ap.add_argument("--no-check-routing", action="store_true",
                    help="MoE archs: skip the router top-k gap check (check_routing)")
    a = ap.parse_args()
    bench_arch = BENCH_ARCH.get(a.shape, "qwen2")
    if (a.arch in MOE_ARCHS and a.shape not in ("tiny", SPARSE_SHAPE) and
            BENCH_ARCH.get(a.shape) != a.arch):
        ap.error(f"--arch {a.arch} has only --shape tiny, {SPARSE_SHAPE} and its -moe-bench shape")
    if a.shape == SPARSE_SHAPE and a.arch not in MOE_ARCHS:
        ap.error(f"--shape {SPARSE_SHAPE} is for the MoE archs {', '.join(MOE_ARCHS)}")
    if a.shape in SHAPES and a.arch != bench_arch:
        ap.error(f"--shape {a.shape} needs --arch {bench_arch}")
    write_checkpoint(a.arch, a.dtype, a.out, a.seed, a.shards, a.shape, a.lm_scale)
    if a.arch in MOE_ARCHS and a.shape in ("tiny", SPARSE_SHAPE) and not a.no_check_routing:
        check_routing(a.out, a.seed)


if __name__ == "__main__":
    main()
