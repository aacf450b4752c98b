#!/usr/bin/python3
"""Export a training checkpoint to a Hugging Face model directory.

Writes config.json, model.safetensors (bf16 by default; own writer: 8-byte little-endian header length,
JSON header padded with spaces to a multiple of 8, tensors sorted by name and packed without gaps,
__metadata__ {"format": "pt"}), generation_config.json, tokenizer.json, tokenizer.model (the
SentencePiece model, for converters such as llama.cpp's), tokenizer_config.json with a ChatML template.

Usage: export_hf.py CKPT TOKENIZER_JSON SPM_MODEL OUT_DIR [--dtype bf16|f32]
"""
import argparse
import json
import os
import shutil
import struct

import torch

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def write_safetensors(path, tensors, dtype):
    """tensors: name -> float tensor. dtype: 'bf16' or 'f32'."""
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    off = 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        if dtype == "bf16":
            b = t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
            st = "BF16"
        else:
            b = t.to(torch.float32).numpy().tobytes()
            st = "F32"
        header[name] = {"dtype": st, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("tokenizer_json")
    ap.add_argument("spm_model")
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    args = ap.parse_args()
    ck = torch.load(args.ckpt, map_location="cpu")
    c = ck["config"]
    os.makedirs(args.out_dir, exist_ok=True)
    sd = {k: v.float() for k, v in ck["model"].items()}
    write_safetensors(os.path.join(args.out_dir, "model.safetensors"), sd, args.dtype)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": c["vocab_size"],
        "hidden_size": c["hidden_size"],
        "intermediate_size": c["intermediate_size"],
        "num_hidden_layers": c["num_hidden_layers"],
        "num_attention_heads": c["num_attention_heads"],
        "num_key_value_heads": c["num_key_value_heads"],
        "head_dim": c["hidden_size"] // c["num_attention_heads"],
        "hidden_act": "silu",
        "max_position_embeddings": c["max_position_embeddings"],
        "rms_norm_eps": c["rms_norm_eps"],
        "rope_theta": c["rope_theta"],
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "pretraining_tp": 1,
        "tie_word_embeddings": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "pad_token_id": None,
        "torch_dtype": "bfloat16" if args.dtype == "bf16" else "float32",
        "use_cache": True,
    }
    json.dump(config, open(os.path.join(args.out_dir, "config.json"), "w"), indent=2)
    gen = {"bos_token_id": 1, "eos_token_id": [2, 4], "do_sample": True, "temperature": 0.8, "top_k": 40,
           "top_p": 0.95}
    json.dump(gen, open(os.path.join(args.out_dir, "generation_config.json"), "w"), indent=2)
    shutil.copyfile(args.tokenizer_json, os.path.join(args.out_dir, "tokenizer.json"))
    shutil.copyfile(args.spm_model, os.path.join(args.out_dir, "tokenizer.model"))
    tj = json.load(open(args.tokenizer_json, encoding="utf-8"))
    tc = {
        "add_bos_token": True,
        "add_eos_token": False,
        "added_tokens_decoder": {
            str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
            for t in tj["added_tokens"]
        },
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "legacy": True,
        "model_max_length": c["max_position_embeddings"],
        "sp_model_kwargs": {},
        "spaces_between_special_tokens": False,
        "tokenizer_class": "LlamaTokenizer",
        "use_default_system_prompt": False,
    }
    json.dump(tc, open(os.path.join(args.out_dir, "tokenizer_config.json"), "w"), indent=2, ensure_ascii=False)
    n = sum(v.numel() for v in sd.values())
    print("exported %d tensors, %d parameters (%s) -> %s" % (len(sd), n, args.dtype, args.out_dir))


if __name__ == "__main__":
    main()
