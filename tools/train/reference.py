#!/usr/bin/python3
"""Independent reference for an exported Llama model directory (Hugging Face layout).

Needs only PyTorch and the standard library; shares no code with the training scripts:
  * reads config.json and parses model.safetensors itself (BF16, F16, F32),
  * implements the tokenizer.json used here (added-token split, Prepend/Replace normalizer, BPE by
    merge rank with byte fallback, TemplateProcessing <s>, Replace/ByteFallback/Fuse/Strip decoder),
  * computes logits for a token sequence with no KV cache (float32 or float64),
  * greedy and sampled generation by full recomputation.

  reference.py MODEL_DIR --prompt "Elizabeth looked at" [--chat] [--greedy] [--max_new 48] [--seed 0]
"""
import argparse
import json
import math
import os
import struct

import torch

# ---------------------------------------------------------------- safetensors


def load_safetensors(path, dtype=torch.float32):
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = bytearray(raw[base + a:base + b])
        shape = info["shape"]
        if info["dtype"] == "BF16":
            t = torch.frombuffer(buf, dtype=torch.int16).to(torch.int32) << 16
            t = t.view(torch.float32)
        elif info["dtype"] == "F16":
            t = torch.frombuffer(buf, dtype=torch.float16).float()
        elif info["dtype"] == "F32":
            t = torch.frombuffer(buf, dtype=torch.float32).clone()
        else:
            raise ValueError("unsupported dtype " + info["dtype"])
        out[name] = t.reshape(shape).to(dtype)
    return out


# ---------------------------------------------------------------- tokenizer.json


class Tokenizer:
    def __init__(self, path):
        tj = json.load(open(path, encoding="utf-8"))
        m = tj["model"]
        assert m["type"] == "BPE" and m["byte_fallback"]
        self.vocab = m["vocab"]
        self.inv = {i: p for p, i in self.vocab.items()}
        self.ranks = {}
        for r, mg in enumerate(m["merges"]):
            a, b = mg.split(" ") if isinstance(mg, str) else mg
            self.ranks[(a, b)] = r
        self.added = {t["content"]: t["id"] for t in tj["added_tokens"]}
        self.special_ids = {t["id"] for t in tj["added_tokens"] if t["special"]}
        for t in tj["added_tokens"]:
            self.inv[t["id"]] = t["content"]
        self.bos_id = self.added["<s>"]

    def _split_added(self, text):
        out, i, start = [], 0, 0
        keys = sorted(self.added, key=len, reverse=True)
        while i < len(text):
            for k in keys:
                if text.startswith(k, i):
                    if start < i:
                        out.append((False, text[start:i]))
                    out.append((True, k))
                    i += len(k)
                    start = i
                    break
            else:
                i += 1
        if start < len(text):
            out.append((False, text[start:]))
        return out

    def _bpe(self, s):
        parts = list(s)
        while len(parts) > 1:
            best, bi = None, -1
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best is None or r < best):
                    best, bi = r, i
            if best is None:
                break
            parts[bi:bi + 2] = [parts[bi] + parts[bi + 1]]
        ids = []
        for p in parts:
            if p in self.vocab:
                ids.append(self.vocab[p])
            else:
                ids.extend(self.vocab["<0x%02X>" % b] for b in p.encode("utf-8"))
        return ids

    def encode(self, text, add_bos=True):
        ids = [self.bos_id] if add_bos else []
        for is_added, seg in self._split_added(text):
            if is_added:
                ids.append(self.added[seg])
            elif seg:
                ids.extend(self._bpe("\u2581" + seg.replace(" ", "\u2581")))
        return ids

    def decode(self, ids, skip_special=True):
        out = bytearray()
        for i in ids:
            if skip_special and i in self.special_ids:
                continue
            p = self.inv[i]
            if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
                out.append(int(p[3:5], 16))
            else:
                out += p.replace("\u2581", " ").encode("utf-8")
        s = out.decode("utf-8", errors="replace")
        return s[1:] if s.startswith(" ") else s


# ---------------------------------------------------------------- model


class Model:
    def __init__(self, model_dir, dtype=torch.float32):
        self.cfg = json.load(open(os.path.join(model_dir, "config.json")))
        self.w = load_safetensors(os.path.join(model_dir, "model.safetensors"), dtype)
        self.dtype = dtype
        c = self.cfg
        self.L = c["num_hidden_layers"]
        self.H = c["num_attention_heads"]
        self.KV = c["num_key_value_heads"]
        self.hd = c.get("head_dim") or c["hidden_size"] // self.H
        self.eps = c["rms_norm_eps"]
        self.theta = c.get("rope_theta", 10000.0)
        if "lm_head.weight" not in self.w:
            self.w["lm_head.weight"] = self.w["model.embed_tokens.weight"]

    def _norm(self, x, w):
        return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps))

    @torch.no_grad()
    def logits(self, ids):
        """ids: [B, T] LongTensor (or list) -> logits [B, T, vocab]; positions start at 0."""
        if not torch.is_tensor(ids):
            ids = torch.tensor([ids])
        B, T = ids.shape
        w, hd, H, KV = self.w, self.hd, self.H, self.KV
        pos = torch.arange(T, dtype=torch.float64)
        inv = self.theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        ang = pos[:, None] * inv[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1).to(self.dtype)
        sin = torch.cat([ang.sin(), ang.sin()], -1).to(self.dtype)

        def rope(x):
            h = hd // 2
            rot = torch.cat([-x[..., h:], x[..., :h]], -1)
            return x * cos + rot * sin

        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = w["model.embed_tokens.weight"][ids]
        for l in range(self.L):
            p = "model.layers.%d." % l
            h = self._norm(x, w[p + "input_layernorm.weight"])
            q = (h @ w[p + "self_attn.q_proj.weight"].T).view(B, T, H, hd).transpose(1, 2)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).view(B, T, KV, hd).transpose(1, 2)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(B, T, KV, hd).transpose(1, 2)
            q, k = rope(q), rope(k)
            g = H // KV
            k = k[:, torch.arange(H) // g]  # query head h reads kv head h // (H / KV)
            v = v[:, torch.arange(H) // g]
            s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            s = s.masked_fill(causal, float("-inf"))
            a = torch.softmax(s, -1) @ v
            x = x + a.transpose(1, 2).reshape(B, T, H * hd) @ w[p + "self_attn.o_proj.weight"].T
            h = self._norm(x, w[p + "post_attention_layernorm.weight"])
            gate = h @ w[p + "mlp.gate_proj.weight"].T
            up = h @ w[p + "mlp.up_proj.weight"].T
            x = x + (gate * torch.sigmoid(gate) * up) @ w[p + "mlp.down_proj.weight"].T
        x = self._norm(x, w["model.norm.weight"])
        return x @ w["lm_head.weight"].T


def sample_next(logits, gen, temperature, top_k, top_p):
    if temperature <= 0:
        return int(torch.argmax(logits))
    l = logits.double() / temperature
    if top_k > 0:
        kth = torch.topk(l, min(top_k, l.numel())).values[-1]
        l = l.masked_fill(l < kth, float("-inf"))
    probs = torch.softmax(l, -1)
    if top_p < 1.0:
        sp, si = torch.sort(probs, descending=True)
        cum = torch.cumsum(sp, 0)
        keep = cum - sp < top_p  # smallest prefix whose mass reaches top_p
        mask = torch.zeros_like(probs, dtype=torch.bool)
        mask[si[keep]] = True
        probs = probs * mask
        probs = probs / probs.sum()
    return int(torch.multinomial(probs, 1, generator=gen))


def generate(model, ids, max_new, eos_ids, temperature=0.0, top_k=0, top_p=1.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = []
    maxpos = model.cfg["max_position_embeddings"]
    for _ in range(max_new):
        ctx = (ids + out)[-maxpos:]
        nxt = sample_next(model.logits(ctx)[0, -1], gen, temperature, top_k, top_p)
        out.append(nxt)
        if nxt in eos_ids:
            break
    return out


def render_chat(model_dir, messages):
    """The ChatML template of tokenizer_config.json (checked against the stored template string)."""
    s = ""
    for m in messages:
        s += "<|im_start|>" + m["role"] + "\n" + m["content"] + "<|im_end|>\n"
    return s + "<|im_start|>assistant\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--prompt", default="Elizabeth looked at")
    ap.add_argument("--chat", action="store_true", help="treat --prompt as a user message")
    ap.add_argument("--greedy", action="store_true")
    ap.add_argument("--max_new", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--f64", action="store_true")
    args = ap.parse_args()
    tok = Tokenizer(os.path.join(args.model_dir, "tokenizer.json"))
    model = Model(args.model_dir, torch.float64 if args.f64 else torch.float32)
    gc = json.load(open(os.path.join(args.model_dir, "generation_config.json")))
    text = render_chat(args.model_dir, [{"role": "user", "content": args.prompt}]) if args.chat else args.prompt
    ids = tok.encode(text, add_bos=True)
    if args.greedy:
        out = generate(model, ids, args.max_new, set(gc["eos_token_id"]))
    else:
        out = generate(model, ids, args.max_new, set(gc["eos_token_id"]), gc["temperature"], gc["top_k"],
                       gc["top_p"], args.seed)
    print("prompt ids:", ids)
    print("output ids:", out)
    print(repr(text), "->", repr(tok.decode(out)))


if __name__ == "__main__":
    main()
