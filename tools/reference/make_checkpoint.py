#!/usr/bin/python3
"""Write tiny random-weight Hugging Face model directories for golden tests.

Usage:
  make_checkpoint.py --arch llama|llama-tied|qwen2|qwen3|mistral --dtype f32|f16|bf16
                     --out DIR [--seed N] [--shards N]
                     [--shape tiny|k256|k320|qwen2.5-0.5b|bench-small]

Each directory holds config.json, generation_config.json, model.safetensors (or
model-0000k-of-0000N.safetensors + model.safetensors.index.json with --shards),
tokenizer.json and tokenizer_config.json (small but valid, so llama.cpp's
converter accepts the directory).

Weights are generated in float32 from a per-tensor seed (seed, tensor name), then
rounded to the requested dtype, so the f32, f16 and bf16 variants of one seed are
the same model up to storage rounding. Initialisation is chosen so next-token
distributions are peaked (embedding std 1, lm_head scaled up): greedy paths then
have clear top-1/top-2 margins (the golden test asserts the margin).
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
}
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
SHAPES = {"qwen2.5-0.5b": QWEN25_05B, "bench-small": BENCH_SMALL}
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
        specs[p + "mlp.gate_proj.weight"] = ((F, H), "proj")
        specs[p + "mlp.up_proj.weight"] = ((F, H), "proj")
        specs[p + "mlp.down_proj.weight"] = ((H, F), "proj")
        if arch == "qwen2":
            specs[p + "self_attn.q_proj.bias"] = ((nq * D,), "bias")
            specs[p + "self_attn.k_proj.bias"] = ((nkv * D,), "bias")
            specs[p + "self_attn.v_proj.bias"] = ((nkv * D,), "bias")
        if arch == "qwen3":
            specs[p + "self_attn.q_norm.weight"] = ((D,), "norm")
            specs[p + "self_attn.k_norm.weight"] = ((D,), "norm")
    return specs


def _randn(name, shape, seed):
    g = torch.Generator().manual_seed((seed * 1000003 + zlib.crc32(name.encode())) % (2**63))
    return torch.randn(*shape, generator=g, dtype=torch.float32)


def bigram_map(vocab, seed):
    """The planted next-token map: a fixed permutation of the ordinary token ids."""
    lo, hi = NORMAL_LO, vocab - NORMAL_HI_PAD
    g = torch.Generator().manual_seed(seed * 7919 + 17)
    perm = torch.randperm(hi - lo, generator=g) + lo
    return list(range(lo, hi)), perm.tolist()


def make_tensor(name, shape, kind, seed, lm_scale, plant=None):
    """float32 values of one tensor.

    plant (tiny models): (vocab, hidden, last_layer). The last layer's MLP gets a planted
    bigram lookup on top of 0.3x its random weights: unit j (one per ordinary token t_j)
    fires on embedding(t_j) through gate/up and writes embedding(pi(t_j)) through down.
    Untied lm_heads are embedding-aligned (plus noise). Next-token distributions are then
    peaked at pi(current token) with large top-1/top-2 margins, while every weight still
    contributes to the logits the golden tests compare."""
    x = _randn(name, shape, seed)
    if kind == "embed":
        return x  # std 1
    if kind == "norm":
        return 1.0 + 0.25 * x
    if kind == "bias":
        return 0.5 * x
    fan_in = shape[-1]
    if kind == "qk":
        return x * (1.5 / math.sqrt(fan_in))  # sharper attention than uniform
    if kind == "lm_head":
        if plant is None:
            return x * (lm_scale / math.sqrt(fan_in))
        e = _randn("model.embed_tokens.weight", shape, seed)
        return (e + 0.5 * x) * (lm_scale / math.sqrt(fan_in))
    if kind == "proj":
        w = x * (1.0 / math.sqrt(fan_in))
        if plant is None or not name.startswith(f"model.layers.{plant[2]}.mlp."):
            return w
        vocab, hidden = plant[0], plant[1]
        e = _randn("model.embed_tokens.weight", (vocab, hidden), seed)
        unit = e / e.norm(dim=1, keepdim=True)
        src, dst = bigram_map(vocab, seed)
        w = 0.3 * w
        if name.endswith("down_proj.weight"):  # [hidden, ffn]
            w[:, :len(src)] += PLANT_GAIN * unit[dst].T
        else:  # gate/up [ffn, hidden]
            w[:len(src), :] += unit[src]
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
    st_name, tdtype, hf_name = DTYPE_NAMES[dtype]
    os.makedirs(out, exist_ok=True)
    config = hf_config(arch, s, hf_name)
    specs = tensor_specs(arch, s)

    plant = None
    if shape == "tiny" or shape in QUANT_SHAPES:
        assert s["ffn"] >= s["vocab"] - NORMAL_LO - NORMAL_HI_PAD
        plant = (s["vocab"], s["hidden"], s["layers"] - 1)

    def producer(name, shp, kind):
        return lambda: make_tensor(name, shp, kind, seed, lm_scale, plant).to(tdtype)

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

    if arch in ("qwen2", "qwen3"):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", required=True, choices=sorted(TINY))
    ap.add_argument("--dtype", default="f32", choices=sorted(DTYPE_NAMES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--shape", default="tiny",
                    choices=["tiny"] + sorted(QUANT_SHAPES) + sorted(SHAPES))
    ap.add_argument("--lm-scale", type=float, default=6.0,
                    help="std of lm_head logits (untied models); tied models use the embedding")
    a = ap.parse_args()
    if a.shape in SHAPES and a.arch != "qwen2":
        ap.error(f"--shape {a.shape} needs --arch qwen2")
    write_checkpoint(a.arch, a.dtype, a.out, a.seed, a.shards, a.shape, a.lm_scale)


if __name__ == "__main__":
    main()
