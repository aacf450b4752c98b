#!/usr/bin/python3
"""Independent PyTorch reference forward pass for Llama / Qwen2 / Qwen3 / Mistral and the
mixture-of-experts Qwen3-MoE / Qwen2-MoE / Mixtral.

Written from the published model definitions, not from Strata's code:
  RMSNorm            w * x / sqrt(mean(x^2) + eps)
  RoPE               rotate-half layout (dim i pairs with i + head_dim/2),
                     inv_freq_i = theta^(-2i/head_dim), llama3 scaling as transformers
                     computes it (or divided by GGUF rope_freqs factors, as llama.cpp does)
  attention          GQA via repeat_interleave, scale 1/sqrt(head_dim), causal mask;
                     Mistral: key j visible from query i iff j <= i and i - j < sliding_window
  Qwen2              q/k/v biases;  Qwen3: per-head RMSNorm on q and k before RoPE
  MLP                down(silu(gate(x)) * up(x))
  tied embeddings    lm_head = embed_tokens when lm_head.weight is absent
  sparse MoE MLP     (route / moe_block) router logits = gate(x) [T, E]; p = softmax over all
                     E experts; the top_k of p (torch.topk); divided by their sum if
                     norm_topk_prob; out = sum_k p_k * expert_k(x), expert = SwiGLU MLP
    Qwen3MoeForCausalLM   Qwen3 attention (q/k RMSNorm, no biases); layer i is sparse iff
                     i not in mlp_only_layers and num_experts > 0 and (i+1) % decoder_sparse_step
                     == 0, else a dense MLP of intermediate_size; experts mlp.experts.{e}.
                     {gate,up,down}_proj (moe_intermediate_size), router mlp.gate
    Qwen2MoeForCausalLM   Qwen2 attention (q/k/v biases), same layer rule and names, plus
                     sigmoid(mlp.shared_expert_gate(x)) * mlp.shared_expert(x) added
                     (shared_expert_intermediate_size); norm_topk_prob default false
    MixtralForCausalLM    Mistral attention (sliding_window when set); every layer sparse;
                     router block_sparse_moe.gate, experts block_sparse_moe.experts.{e}.w1
                     (gate) / w3 (up) / w2 (down); top-k always renormalised
  routing precision  transformers softmaxes in float32; here the softmax is in the compute
                     dtype (f64, or f32 with --compute f32), so weights carry no f32 rounding
                     and the top-k choice equals transformers' except at exact/near ties,
                     which make_checkpoint.py's planted routing keeps >= 1 logit away
Everything is computed in float64 (or --compute f32) with no KV cache: every greedy
step recomputes the whole sequence.

Reads HF directories (config.json + safetensors, F32/F16/BF16, sharded or not) and GGUF
files (F32/F16/BF16 and the block-quantized types of gguf_io.py, dequantized exactly as
ggml does; llama's q/k rows are un-permuted). MoE GGUF (llama.cpp's converter names):
blk.N.ffn_gate_inp (router), blk.N.ffn_{gate,up,down}_exps (experts stacked [E, rows, cols]),
blk.N.ffn_{gate,up,down}_shexp and ffn_gate_inp_shexp (shared expert); archs qwen3moe
(renormalised, as llama.cpp's graph), qwen2moe (not renormalised) and llama with
llama.expert_count / expert_used_count (Mixtral, renormalised); a layer is sparse iff it has
ffn_gate_inp. The pre-stacking per-expert Mixtral names (blk.N.ffn_gate.E) are not read.

CLI (same contract as `strata generate`):
  reference.py --model PATH --prompt-ids 1,2,3 --max-tokens N [--json] [--dump-logits F]
  reference.py --model PATH --sequence-ids 1,2,3 --dump-logits F   (logits only)
Logits file: int64 rows, int64 vocab, rows*vocab float32; row i predicts token i+1.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_io import read_gguf  # noqa: E402
from st_io import read_model_dir  # noqa: E402

ARCHS = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
         "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
         "Qwen3MoeForCausalLM": "qwen3_moe", "Qwen2MoeForCausalLM": "qwen2_moe",
         "MixtralForCausalLM": "mixtral"}


class MoeSpec:
    """Sparse-MoE hyper-parameters: which layers are sparse, expert count, top-k, whether the
    top-k weights are renormalised, and the HF module names (`prefix` is "mlp" for Qwen2/3-MoE,
    "block_sparse_moe" for Mixtral; `proj` maps gate/up/down to the expert's linear names)."""

    def __init__(self, layers, experts, top_k, norm_topk_prob, prefix, proj, shared):
        self.layers, self.experts, self.top_k = set(layers), experts, top_k
        self.norm_topk_prob, self.prefix, self.proj, self.shared = \
            norm_topk_prob, prefix, proj, shared


QWEN_MOE_PROJ = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
MIXTRAL_PROJ = {"gate": "w1", "up": "w3", "down": "w2"}


def moe_spec_from_config(arch, c):
    """transformers' rule for which layers are sparse (Qwen2Moe/Qwen3MoeDecoderLayer): layer i
    is a SparseMoeBlock iff i not in mlp_only_layers and num_experts > 0 and
    (i + 1) % decoder_sparse_step == 0; every Mixtral layer is sparse."""
    n = c["num_hidden_layers"]
    if arch == "mixtral":
        return MoeSpec(range(n), c.get("num_local_experts", 8), c.get("num_experts_per_tok", 2),
                       True, "block_sparse_moe", MIXTRAL_PROJ, False)
    experts = c.get("num_experts", 60 if arch == "qwen2_moe" else 128)
    step = c.get("decoder_sparse_step", 1)
    only = c.get("mlp_only_layers") or []
    layers = [i for i in range(n) if i not in only and experts > 0 and (i + 1) % step == 0]
    top_k = c.get("num_experts_per_tok", 4 if arch == "qwen2_moe" else 8)
    return MoeSpec(layers, experts, top_k, bool(c.get("norm_topk_prob", False)), "mlp",
                   QWEN_MOE_PROJ, arch == "qwen2_moe")


class Model:
    """Normalized hyper-parameters plus weights in Hugging Face names (float64)."""

    def __init__(self, arch, hidden, layers, heads, kv_heads, head_dim, eps, inv_freq,
                 sliding_window, weights):
        self.arch, self.hidden, self.layers = arch, hidden, layers
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.eps, self.inv_freq, self.sliding_window = eps, inv_freq, sliding_window
        self.w = weights
        self.vocab = weights["model.embed_tokens.weight"].shape[0]
        self.wtypes = {}  # HF weight name -> GGUF tensor type name ("Q4_K", ...); GGUF only
        self.moe = None  # MoeSpec for sparse-MoE models
        self._emu_weights = {}  # emulation-rounded weights, by (emulation, name)

    def lm_head_name(self):
        return "lm_head.weight" if "lm_head.weight" in self.w else "model.embed_tokens.weight"

    def lm_head(self):
        return self.w[self.lm_head_name()]

    def to(self, dtype):
        self.w = {k: v.to(dtype) for k, v in self.w.items()}
        self._emu_weights = {}
        self.inv_freq = self.inv_freq.to(torch.float64)
        return self


# ------------------------------------------------------------------ rope frequencies

def default_inv_freq(theta, dim):
    i = torch.arange(0, dim, 2, dtype=torch.float64)
    return 1.0 / (theta ** (i / dim))


def llama3_inv_freq(theta, dim, scaling):
    """transformers' _compute_llama3_parameters, in float64."""
    inv_freq = default_inv_freq(theta, dim)
    factor = scaling["factor"]
    low_ff, high_ff = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen = old_len / low_ff
    high_freq_wavelen = old_len / high_ff
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low_ff) / (high_ff - low_ff)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    is_medium = (wavelen >= high_freq_wavelen) & (wavelen <= low_freq_wavelen)
    return torch.where(is_medium, smoothed, scaled)


# ------------------------------------------------------------------ loading

def load_hf_dir(path):
    with open(os.path.join(path, "config.json")) as f:
        c = json.load(f)
    arch = ARCHS[c["architectures"][0]]
    heads = c["num_attention_heads"]
    head_dim = c.get("head_dim") or c["hidden_size"] // heads
    theta = c.get("rope_theta", 10000.0)
    scaling = c.get("rope_scaling")
    rope_type = (scaling or {}).get("rope_type", (scaling or {}).get("type"))
    if scaling is None or rope_type == "default":
        inv_freq = default_inv_freq(theta, head_dim)
    elif rope_type == "llama3":
        inv_freq = llama3_inv_freq(theta, head_dim, scaling)
    else:
        raise ValueError(f"rope_scaling type {rope_type} not implemented in the reference")
    window = None
    if arch in ("mistral", "mixtral"):
        window = c.get("sliding_window")
    elif arch in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe") and c.get("use_sliding_window"):
        raise ValueError("use_sliding_window=true (per-layer windows) not implemented")
    weights = {k: v.to(torch.float64) for k, v in read_model_dir(path).items()}
    if c.get("tie_word_embeddings", False):
        assert "lm_head.weight" not in weights or arch in ("qwen2", "qwen2_moe"), \
            "tie_word_embeddings=true but lm_head.weight present"
        weights.pop("lm_head.weight", None)
    else:
        assert "lm_head.weight" in weights, "untied model without lm_head.weight"
    m = Model(arch, c["hidden_size"], c["num_hidden_layers"], heads,
              c.get("num_key_value_heads", heads), head_dim, c["rms_norm_eps"],
              inv_freq, window, weights)
    if arch in ("qwen3_moe", "qwen2_moe", "mixtral"):
        m.moe = moe_spec_from_config(arch, c)
    return m


GGUF_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
GGUF_LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight", "attn_output.weight": "self_attn.o_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias", "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}


# llama.cpp's MoE tensors (convert_hf_to_gguf stacks the experts into 3-D tensors).
GGUF_EXPS = {"ffn_gate_exps.weight": "gate", "ffn_up_exps.weight": "up",
             "ffn_down_exps.weight": "down"}
GGUF_MOE_NAMES = {"ffn_gate_inp.weight": "gate.weight",
                  "ffn_gate_shexp.weight": "shared_expert.gate_proj.weight",
                  "ffn_up_shexp.weight": "shared_expert.up_proj.weight",
                  "ffn_down_shexp.weight": "shared_expert.down_proj.weight",
                  "ffn_gate_inp_shexp.weight": "shared_expert_gate.weight"}


def unpermute_rows(w, n_head):
    """Undo convert_hf_to_gguf's LlamaModel.permute (HF rotate-half -> adjacent pairs):
    it reshapes rows to [n_head, 2, head_dim/2] and swaps the last two axes."""
    rows = w.shape[0]
    return (w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:])
            .transpose(1, 2).reshape(w.shape))


def load_gguf(path):
    meta, tensors, gguf_types = read_gguf(path)
    arch = meta["general.architecture"]
    if arch not in ("llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe"):
        raise ValueError(f"GGUF architecture {arch} not supported by the reference")
    g = lambda k, d=None: meta.get(f"{arch}.{k}", d)  # noqa: E731
    hidden = g("embedding_length")
    heads = g("attention.head_count")
    kv_heads = g("attention.head_count_kv", heads)
    head_dim = g("attention.key_length", hidden // heads)
    theta = g("rope.freq_base", 10000.0)
    inv_freq = default_inv_freq(theta, head_dim)
    if "rope_freqs.weight" in tensors:  # llama3 scaling: llama.cpp divides by these factors
        inv_freq = inv_freq / tensors.pop("rope_freqs.weight").to(torch.float64)
    weights, wtypes = {}, {}
    n_expert = g("expert_count", 0)
    moe = None
    if n_expert:
        # llama.cpp's MoE graphs: qwen3moe and llama (Mixtral) renormalise the top-k weights,
        # qwen2moe does not; a layer is sparse iff it has ffn_gate_inp.
        layers = sorted(int(n.split(".")[1]) for n in tensors if parts_is(n, "ffn_gate_inp.weight"))
        mixtral = arch == "llama"
        moe = MoeSpec(layers, n_expert, g("expert_used_count"), arch != "qwen2moe",
                      "block_sparse_moe" if mixtral else "mlp",
                      MIXTRAL_PROJ if mixtral else QWEN_MOE_PROJ,
                      any(parts_is(n, "ffn_gate_inp_shexp.weight") for n in tensors))
    for name, t in list(tensors.items()):
        stacked = name.startswith("blk.") and name.split(".", 2)[2] in GGUF_EXPS
        if stacked:  # [n_expert, rows, cols] -> one HF tensor per expert
            layer, kind = name.split(".")[1], GGUF_EXPS[name.split(".", 2)[2]]
            for e in range(t.shape[0]):
                hf = f"model.layers.{layer}.{moe.prefix}.experts.{e}.{moe.proj[kind]}.weight"
                weights[hf] = t[e].to(torch.float64)
                wtypes[hf] = gguf_types[name]
            continue
        if moe is not None and name.startswith("blk.") and \
                name.split(".", 2)[2] in GGUF_MOE_NAMES:
            hf = f"model.layers.{name.split('.')[1]}.{moe.prefix}." + \
                GGUF_MOE_NAMES[name.split(".", 2)[2]]
            t = t.reshape(1, -1) if hf.endswith("shared_expert_gate.weight") else t
            weights[hf] = t.to(torch.float64)
            wtypes[hf] = gguf_types[name]
            continue
        if name in GGUF_NAMES:
            hf = GGUF_NAMES[name]
        else:
            parts = name.split(".", 2)
            assert parts[0] == "blk", name
            hf = f"model.layers.{parts[1]}." + GGUF_LAYER_NAMES[parts[2]]
        t = t.to(torch.float64)
        if arch == "llama" and parts_is(name, "attn_q.weight"):
            t = unpermute_rows(t, heads)
        elif arch == "llama" and parts_is(name, "attn_k.weight"):
            t = unpermute_rows(t, kv_heads)
        weights[hf] = t
        wtypes[hf] = gguf_types[name]
    m = Model(arch, hidden, g("block_count"), heads, kv_heads, head_dim,
              g("attention.layer_norm_rms_epsilon"), inv_freq, None, weights)
    m.wtypes = wtypes
    m.moe = moe
    return m


def parts_is(name, suffix):
    return name.startswith("blk.") and name.split(".", 2)[2] == suffix


def load_model(path):
    if path.endswith(".gguf"):
        return load_gguf(path)
    return load_hf_dir(path)


# ------------------------------------------------------------------ forward

def rms_norm(x, w, eps):
    return w * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def round_bf16(x):
    return x.to(torch.float32).to(torch.bfloat16).to(x.dtype)


def round_q8_0(x):
    """Quantize the last axis in blocks of 32 as ggml's quantize_row_q8_0 does."""
    shp = x.shape
    b = x.reshape(*shp[:-1], shp[-1] // 32, 32)
    d = b.abs().amax(-1, keepdim=True) / 127.0
    inv = torch.where(d > 0, 1.0 / d, torch.zeros_like(d))
    q = torch.sign(b * inv) * torch.floor((b * inv).abs() + 0.5)  # half away from zero
    return (q * d.to(torch.float16).to(x.dtype)).reshape(shp)


def round_q8_k(x):
    """Quantize the last axis in blocks of 256 as ggml's quantize_row_q8_K does (float32):
    max = the first element of largest |x|, iscale = -127 / max, q = nearest(iscale * x)
    (ties to even, capped at 127), value = q * (1 / iscale); the scale stays float32."""
    shp = x.shape
    b = x.to(torch.float32).reshape(*shp[:-1], shp[-1] // 256, 256)
    idx = b.abs().argmax(-1, keepdim=True)  # first maximum, as ggml's strict '>' scan
    mx = torch.gather(b, -1, idx)
    iscale = torch.where(mx != 0, -127.0 / mx, torch.zeros_like(mx))
    q = torch.round(iscale * b).clamp(max=127)  # torch.round: half to even
    d = torch.where(mx != 0, 1.0 / iscale, torch.zeros_like(mx))
    return (q * d).reshape(shp).to(x.dtype)


# The activation quantization llama.cpp's CPU matmul applies for each weight type (the
# weight type's vec_dot_type): Q8_0 for the 32-value types, Q8_K for the 256-value ones.
# Q4_1 / Q5_1 pair with Q8_1, whose values are Q8_0's (it also stores d * sum(q) in f16 for
# the min term; that extra f16 rounding is left out here).
ACT_QUANT = {"Q4_0": round_q8_0, "Q4_1": round_q8_0, "Q5_0": round_q8_0, "Q5_1": round_q8_0,
             "Q8_0": round_q8_0, "IQ4_NL": round_q8_0, "Q2_K": round_q8_k, "Q3_K": round_q8_k,
             "Q4_K": round_q8_k, "Q5_K": round_q8_k, "Q6_K": round_q8_k, "IQ4_XS": round_q8_k}


def fp8_grid(kind):
    """All non-negative finite values of e4m3fn / e5m2, ascending (index = code)."""
    mant, bias, max_code = (3, 7, 0x7e) if kind == "fp8_e4m3" else (2, 15, 0x7b)
    vals = []
    for c in range(max_code + 1):
        e, m = c >> mant, c & ((1 << mant) - 1)
        vals.append(math.ldexp(m, 1 - bias - mant) if e == 0 else
                    math.ldexp(1 + m / (1 << mant), e - bias))
    return torch.tensor(vals, dtype=torch.float64)


def round_fp8(y, kind):
    """Nearest value of the fp8 format, ties to the even code, saturating at max finite."""
    grid = fp8_grid(kind)
    a = y.abs().to(torch.float64).clamp(max=float(grid[-1]))
    hi = torch.searchsorted(grid, a).clamp(max=len(grid) - 1)
    lo = (hi - 1).clamp(min=0)
    d_lo, d_hi = a - grid[lo], grid[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    q = torch.where(pick_hi, grid[hi], grid[lo])
    return (torch.sign(y) * q).to(y.dtype)


def round_kv(x, kv):
    """x [T, kv_heads, D] as a KV cache of dtype `kv` stores it: f32 keeps the value (the
    reference's float64 stands in for exact f32), bf16/f16 round to nearest even; fp8 scales
    each (token, head) by amax / max_finite, rounds to the format and scales back."""
    return round_kv_choices(x, kv, 0.0)[0]


def round_kv_choices(x, kv, rel):
    """(stored, other): stored is round_kv(x, kv); other is, per element, the value the cache
    would hold had the element been off by up to `rel` times the largest |x| of its (token,
    head) row before rounding (an engine computing K/V in f32 is off from this float64
    reference by up to ~8e-7 of that row maximum: tests/golden/README.md). other equals stored
    except at the elements that lie that close to a rounding boundary, where an exact engine
    may legitimately store the neighbouring value (fp8: the per-token scale is kept)."""
    if kv == "f32":
        return x, x
    amax = x.abs().amax(-1, keepdim=True)
    if kv in ("bf16", "f16"):
        half = torch.bfloat16 if kv == "bf16" else torch.float16
        to = lambda y: y.to(torch.float32).to(half).to(x.dtype)  # noqa: E731
        stored = to(x)
        if rel == 0:
            return stored, stored
        lo, hi = to(x - rel * amax), to(x + rel * amax)
        return stored, torch.where(lo != stored, lo, hi)
    max_finite = 448.0 if kv == "fp8_e4m3" else 57344.0
    scale = torch.where(amax > 0, amax / max_finite, torch.ones_like(amax))
    y = x / scale
    stored = round_fp8(y, kv) * scale
    if rel == 0:
        return stored, stored
    lo = round_fp8(y - rel * max_finite, kv) * scale
    hi = round_fp8(y + rel * max_finite, kv) * scale
    return stored, torch.where(lo != stored, lo, hi)


# How far an engine's f32 K/V may be from this float64 reference's before they are rounded to
# a compact KV dtype, as a fraction of the largest |x| of the element's (token, head) row:
# elements that close to a rounding boundary may be stored as either neighbour
# (tests/golden/README.md, "Compact KV cache").
KV_BOUNDARY_REL = 1e-6


class KvBoundary:
    """What forward() does at the K/V elements near a rounding boundary (round_kv_choices with
    `rel`): records them in `found` (when not None) as (layer, "k" | "v", flat index into the
    [T, kv_heads, D] tensor: the same element for every T), and stores the other value at
    those listed in `flips`, or at all of them with flip_all."""

    def __init__(self, rel, found=None, flips=(), flip_all=False):
        self.rel, self.found, self.flips, self.flip_all = rel, found, set(flips), flip_all

    def store(self, x, kv, layer, side):
        stored, other = round_kv_choices(x, kv, self.rel)
        if self.found is not None:
            near = (other != stored).flatten().nonzero().flatten().tolist()
            self.found.extend((layer, side, i) for i in near)
        if self.flip_all:
            return other
        mine = [i for (l, s, i) in self.flips if l == layer and s == side]
        if mine:
            stored = stored.clone()
            stored.view(-1)[mine] = other.reshape(-1)[mine]
        return stored


def kv_boundary_allowance(m, ids, kv, rel, limit=256):
    """Per position of forward(m, ids, kv=kv): how far the logits may legitimately move when K/V
    elements near a rounding boundary (within `rel`, as round_kv_choices measures it) round
    the other way. Each such element is flipped alone and its effect (row-wise max |change|)
    is summed over the elements, a first-order bound on any combination. Returns (float64
    numpy [len(ids)], number of elements); more than `limit` elements raise (the case would
    test little)."""
    import numpy as np
    found = []
    base = forward(m, ids, kv=kv, kv_boundary=KvBoundary(rel, found=found)).numpy()
    if len(found) > limit:
        raise RuntimeError(f"{len(found)} K/V elements within {rel:g} of a rounding boundary "
                           f"(limit {limit})")
    allowance = np.zeros(base.shape[0])
    for e in found:
        moved = forward(m, ids, kv=kv, kv_boundary=KvBoundary(rel, flips=[e])).numpy()
        allowance += np.abs(moved - base).max(1)
    return allowance, len(found)


# --kv-cache-dtype spellings (Strata's / vLLM's) -> round_kv's names.
KV_DTYPES = {"float32": "f32", "f32": "f32", "bfloat16": "bf16", "bf16": "bf16",
             "float16": "f16", "f16": "f16", "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3",
             "fp8_e5m2": "fp8_e5m2"}


# Optional emulation of an engine's rounding in every matmul; used only to size the golden-test
# tolerances (tests/golden/README.md), never for the reference itself.
#   bf16-act      inputs rounded to bf16
#   q8_0-act      inputs quantized to Q8_0 (32-value blocks)
#   llamacpp-act  inputs quantized as llama.cpp does for that weight's GGUF type (ACT_QUANT:
#                 Q8_0 or Q8_K); float weights keep exact inputs
#   bf16-wa       inputs and (dequantized) weights rounded to bf16, as a bf16 GEMM does
EMULATE = {"none": lambda x: x, "bf16-act": round_bf16, "q8_0-act": round_q8_0}
EMULATIONS = sorted(EMULATE) + ["bf16-wa", "llamacpp-act"]


def linear_fn(m, emulate):
    """x @ W.T for weight `name`, with the emulated rounding of inputs (and weights)."""
    def weight(name):
        if emulate != "bf16-wa":
            return m.w[name]
        key = (emulate, name)
        if key not in m._emu_weights:
            m._emu_weights[key] = round_bf16(m.w[name])
        return m._emu_weights[key]

    def act(x, name):
        if emulate == "bf16-wa":
            return round_bf16(x)
        if emulate == "llamacpp-act":
            return ACT_QUANT.get(m.wtypes.get(name), lambda v: v)(x)
        return EMULATE[emulate](x)

    return lambda x, name: act(x, name) @ weight(name).T


def gated_mlp(lin, h, gate, up, down):
    """down(silu(gate(h)) * up(h)) for the weights named gate / up / down."""
    return lin(torch.nn.functional.silu(lin(h, gate)) * lin(h, up), down)


def route(router_logits, top_k, norm_topk_prob):
    """transformers' routing (Qwen2Moe/Qwen3Moe/MixtralSparseMoeBlock): probabilities =
    softmax over all experts, the top_k of them by torch.topk (its tie order), divided by
    their sum when norm_topk_prob (always for Mixtral). transformers takes the softmax in
    float32 whatever the model dtype; here it is taken in the compute dtype (float64 by
    default, float32 with --compute f32, i.e. exactly transformers' dtype there), so the
    reference's weights carry no float32 rounding. The top-k *choice* is the same as
    transformers' except at near-ties of the k-th and (k+1)-th probability, which no reference
    can settle; make_checkpoint.py plants routings whose k-th/(k+1)-th router-logit gap is
    several logits (route_margins reports it). Returns (weights [T, k], experts [T, k])."""
    dt = torch.float64 if router_logits.dtype == torch.float64 else torch.float32
    probs = torch.softmax(router_logits.to(dt), dim=-1)
    weights, experts = torch.topk(probs, top_k, dim=-1)
    if norm_topk_prob:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), experts


def moe_names(m, layer):
    """(router, [(gate, up, down) per expert], shared (gate, up, down, shared_gate) or None)."""
    p = f"model.layers.{layer}.{m.moe.prefix}."
    pr = m.moe.proj
    experts = [tuple(f"{p}experts.{e}.{pr[k]}.weight" for k in ("gate", "up", "down"))
               for e in range(m.moe.experts)]
    shared = None
    if m.moe.shared:
        shared = tuple(f"{p}shared_expert.{k}_proj.weight" for k in ("gate", "up", "down")) + \
            (f"{p}shared_expert_gate.weight",)
    return p + "gate.weight", experts, shared


def moe_block(m, layer, h, lin, route_stats=None):
    """Sparse MoE MLP of one layer on h [T, H] (the post-attention-normed hidden states):
    router logits = gate(h) [T, E]; route() picks top_k experts per token with weights w;
    out = sum_k w_k * expert_k(h) (+ sigmoid(shared_expert_gate(h)) * shared_expert(h) for
    Qwen2-MoE). Vectorised over tokens: every expert runs on every token and the results are
    combined with a dense [T, E] weight matrix that is zero off the chosen experts.
    route_stats (a list) receives (layer, router_logits) when given."""
    router, experts, shared = moe_names(m, layer)
    logits = lin(h, router)
    if route_stats is not None:
        route_stats.append((layer, logits))
    w, idx = route(logits, m.moe.top_k, m.moe.norm_topk_prob)
    dense = torch.zeros_like(logits).scatter(1, idx, w)  # [T, E]
    out = torch.zeros_like(h)
    for e, (g, u, d) in enumerate(experts):
        sel = dense[:, e] != 0
        if bool(sel.any()):
            out = out + dense[:, e:e + 1] * gated_mlp(lin, h, g, u, d)
    if shared is not None:
        g, u, d, sg = shared
        out = out + torch.sigmoid(lin(h, sg)) * gated_mlp(lin, h, g, u, d)
    return out


def route_margins(m, ids, kv="f32"):
    """Per MoE layer and position: the gap between the k-th and (k+1)-th largest router logit
    (absolute, and relative to the row's max |logit|). Returns a list of (layer, abs, rel)."""
    stats = []
    forward(m, ids, kv=kv, route_stats=stats)
    out = []
    for layer, lg in stats:
        srt = torch.sort(lg.to(torch.float64), dim=-1, descending=True).values
        k = m.moe.top_k
        gap = srt[:, k - 1] - srt[:, k] if k < srt.shape[1] else torch.full_like(srt[:, 0], math.inf)
        out.append((layer, gap, gap / srt.abs().max(-1).values))
    return out


def forward(m, ids, emulate="none", kv="f32", moe_fn=None, route_stats=None,
            kv_boundary=None):
    """Logits [len(ids), vocab] for every position, recomputed from scratch, with K (after
    rope) and V rounded as a `kv` cache stores them (round_kv). moe_fn replaces moe_block
    (validate_reference.py's naive loop); route_stats collects router logits; kv_boundary (a
    KvBoundary) records or flips the K/V elements near a rounding boundary."""
    lin = linear_fn(m, emulate)
    dt = m.w["model.embed_tokens.weight"].dtype
    T = len(ids)
    nq, nkv, D = m.heads, m.kv_heads, m.head_dim
    pos = torch.arange(T, dtype=torch.float64)
    ang = pos[:, None] * m.inv_freq[None, :]  # [T, D/2]
    cos = torch.cat((ang.cos(), ang.cos()), -1).to(dt)[:, None, :]  # [T, 1, D]
    sin = torch.cat((ang.sin(), ang.sin()), -1).to(dt)[:, None, :]
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    visible = j <= i
    if m.sliding_window:
        visible &= (i - j) < m.sliding_window
    x = m.w["model.embed_tokens.weight"][torch.tensor(ids)]  # [T, H]
    for layer in range(m.layers):
        p = f"model.layers.{layer}."
        w = lambda n: m.w.get(p + n)  # noqa: E731
        h = rms_norm(x, w("input_layernorm.weight"), m.eps)
        q, k, v = lin(h, p + "self_attn.q_proj.weight"), lin(h, p + "self_attn.k_proj.weight"), \
            lin(h, p + "self_attn.v_proj.weight")
        if w("self_attn.q_proj.bias") is not None:
            q = q + w("self_attn.q_proj.bias")
            k = k + w("self_attn.k_proj.bias")
            v = v + w("self_attn.v_proj.bias")
        q, k, v = q.view(T, nq, D), k.view(T, nkv, D), v.view(T, nkv, D)
        if w("self_attn.q_norm.weight") is not None:
            q = rms_norm(q, w("self_attn.q_norm.weight"), m.eps)
            k = rms_norm(k, w("self_attn.k_norm.weight"), m.eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if kv_boundary is None:
            k, v = round_kv(k, kv), round_kv(v, kv)
        else:
            k, v = kv_boundary.store(k, kv, layer, "k"), kv_boundary.store(v, kv, layer, "v")
        k = k.repeat_interleave(nq // nkv, dim=1)  # query head h reads kv head h // group
        v = v.repeat_interleave(nq // nkv, dim=1)
        scores = torch.einsum("thd,shd->hts", q, k) / math.sqrt(D)
        scores = scores.masked_fill(~visible[None], float("-inf"))
        pr = torch.softmax(scores, dim=-1)
        o = torch.einsum("hts,shd->thd", pr, v).reshape(T, nq * D)
        x = x + lin(o, p + "self_attn.o_proj.weight")
        h = rms_norm(x, w("post_attention_layernorm.weight"), m.eps)
        if m.moe is not None and layer in m.moe.layers:
            x = x + (moe_fn or moe_block)(m, layer, h, lin, route_stats)
        else:
            x = x + gated_mlp(lin, h, p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight",
                              p + "mlp.down_proj.weight")
    x = rms_norm(x, m.w["model.norm.weight"], m.eps)
    return lin(x, m.lm_head_name())


def greedy(m, prompt, max_tokens, emulate="none", kv="f32", kv_boundary=None):
    """Greedy decode by full recomputation. Returns the output ids."""
    seq = list(prompt)
    out = []
    for _ in range(max_tokens):
        logits = forward(m, seq, emulate, kv, kv_boundary=kv_boundary)
        nxt = int(torch.argmax(logits[-1]))
        out.append(nxt)
        seq.append(nxt)
    return out


def top_logprobs(logits, k=5):
    lp = torch.log_softmax(logits.to(torch.float64), dim=-1)
    vals, idx = torch.topk(lp, k, dim=-1)
    return [[[int(a), float(b)] for a, b in zip(ri, rv)] for ri, rv in zip(idx, vals)]


def write_logits(path, logits):
    rows, vocab = logits.shape
    with open(path, "wb") as f:
        f.write(struct.pack("<qq", rows, vocab))
        f.write(logits.to(torch.float32).numpy().astype("<f4").tobytes())


def read_logits(path):
    with open(path, "rb") as f:
        rows, vocab = struct.unpack("<qq", f.read(16))
        data = np.frombuffer(f.read(), dtype="<f4")
    if data.size != rows * vocab:
        raise ValueError(f"{path}: header says {rows}x{vocab} floats, file has {data.size}")
    return data.reshape(rows, vocab)


def parse_ids(s):
    return [int(t) for t in s.split(",") if t.strip()]


def main():
    ap = argparse.ArgumentParser(description="Independent PyTorch reference forward pass")
    ap.add_argument("--model", required=True, help="HF model directory or .gguf file")
    ap.add_argument("--prompt-ids")
    ap.add_argument("--sequence-ids", help="score this full sequence instead of generating")
    ap.add_argument("--max-tokens", type=int, default=0)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dump-logits")
    ap.add_argument("--compute", choices=["f64", "f32"], default="f64")
    ap.add_argument("--kv-cache-dtype", default="float32", choices=sorted(KV_DTYPES),
                    help="round K/V as a KV cache of this dtype stores them")
    ap.add_argument("--inject-bug", choices=["none", "bf16-act", "q8_0-act", "bf16-wa",
                                             "llamacpp-act", "no-sliding-window", "kv-f32",
                                             "kv-boundary-flip"],
                    default="none", help="test-only: make the output deliberately inexact "
                    "(used by run_golden.py --self-test to prove the golden test fails)")
    a = ap.parse_args()
    if a.temperature != 0:
        ap.error("the reference only does greedy decoding (--temperature 0)")
    torch.set_num_threads(1)
    m = load_model(a.model).to(torch.float64 if a.compute == "f64" else torch.float32)
    emulate = a.inject_bug if a.inject_bug in EMULATIONS else "none"
    if a.inject_bug == "no-sliding-window":
        m.sliding_window = None
    kv = "f32" if a.inject_bug == "kv-f32" else KV_DTYPES[a.kv_cache_dtype]
    # kv-boundary-flip: every K/V element within KV_BOUNDARY_REL of a rounding boundary stored
    # as its other neighbour, as an exact f32 engine may (not a bug: the golden test must pass).
    flip = KvBoundary(KV_BOUNDARY_REL, flip_all=True) if a.inject_bug == "kv-boundary-flip" \
        else None
    if a.sequence_ids:
        prompt, out = parse_ids(a.sequence_ids), []
    else:
        prompt = parse_ids(a.prompt_ids)
        out = greedy(m, prompt, a.max_tokens, emulate, kv, kv_boundary=flip)
    seq = prompt + out
    logits = forward(m, seq[:-1], emulate, kv, kv_boundary=flip) if len(seq) > 1 \
        else torch.zeros(0, m.vocab)
    if a.dump_logits:
        write_logits(a.dump_logits, logits)
    if a.json:
        gen_rows = logits[len(prompt) - 1:] if out else logits[:0]
        print(json.dumps({"prompt_ids": prompt, "output_ids": out,
                          "top_logprobs": top_logprobs(gen_rows)}))


if __name__ == "__main__":
    main()
