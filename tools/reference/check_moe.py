#!/usr/bin/python3
"""Cross-check of the reference's vectorised sparse-MoE block (reference.moe_block) against
a naive, independently written loop over tokens and experts (run by hand, CPU only).

The naive version takes each token alone: router logits as one dot product per expert,
softmax with math.exp in Python floats (float64), the top-k by a stable sort on
(-probability, expert index) (the order torch.topk gives when there are no exact ties),
renormalisation when norm_topk_prob, then each chosen expert's SwiGLU MLP as explicit
matrix-vector products, summed in top-k order, plus the sigmoid-gated shared expert
(Qwen2-MoE). Whole-model logits with moe_fn=naive_moe must equal the default forward to
1e-10 (relative to max |logit|) in float64; the same run reports the router top-k gaps.

Usage: check_moe.py WORKDIR   (builds f32 and bf16 checkpoints of each MoE arch there)
"""
import math
import os
import random
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference as R  # noqa: E402

ARCHS = ["qwen3-moe", "qwen2-moe", "mixtral"]


def naive_moe(m, layer, h, lin, route_stats=None):
    """Per token, per chosen expert (see the module docstring). Ignores `lin`'s emulation."""
    router, experts, shared = R.moe_names(m, layer)
    W = m.w
    out = torch.zeros_like(h)
    for t in range(h.shape[0]):
        x = h[t]
        logits = [float(torch.dot(W[router][e], x)) for e in range(m.moe.experts)]
        mx = max(logits)
        ex = [math.exp(v - mx) for v in logits]
        z = sum(ex)
        probs = [v / z for v in ex]
        chosen = sorted(range(m.moe.experts), key=lambda e: (-probs[e], e))[:m.moe.top_k]
        wts = [probs[e] for e in chosen]
        if m.moe.norm_topk_prob:
            s = sum(wts)
            wts = [v / s for v in wts]
        acc = torch.zeros_like(x)
        for e, wt in zip(chosen, wts):
            g, u, d = experts[e]
            a = W[g] @ x
            act = a / (1.0 + torch.exp(-a))  # silu
            acc = acc + wt * (W[d] @ (act * (W[u] @ x)))
        if shared is not None:
            g, u, d, sg = shared
            a = W[g] @ x
            act = a / (1.0 + torch.exp(-a))
            gate = 1.0 / (1.0 + math.exp(-float(W[sg][0] @ x)))
            acc = acc + gate * (W[d] @ (act * (W[u] @ x)))
        out[t] = acc
    return out


def rel_err(a, b):
    return float(((a - b).abs().max(1).values / b.abs().max(1).values).max())


def main():
    work = sys.argv[1]
    torch.set_num_threads(1)
    ok = True
    for arch in ARCHS:
        for dtype in ("f32", "bf16"):
            d = os.path.join(work, f"{arch}-{dtype}")
            subprocess.run([sys.executable, os.path.join(HERE, "make_checkpoint.py"), "--arch",
                            arch, "--dtype", dtype, "--out", d], check=True)
            m = R.load_model(d).to(torch.float64)
            rng = random.Random(7)
            ids = [rng.randrange(3, m.vocab - 8) for _ in range(40)]
            fast = R.forward(m, ids)
            slow = R.forward(m, ids, moe_fn=naive_moe)
            err = rel_err(slow, fast)
            gaps = R.route_margins(m, ids)
            gmin = min(float(g.min()) for _, g, _ in gaps)
            rmin = min(float(r.min()) for _, _, r in gaps)
            f32 = rel_err(R.forward(R.load_model(d).to(torch.float32), ids).double(), fast)
            good = err <= 1e-10
            ok &= good
            print(f"{arch:10s} {dtype:5s} naive-vs-vectorised {err:.1e} "
                  f"{'ok' if good else 'FAIL'}  f32-compute {f32:.1e}  router top-k gap "
                  f"min {gmin:.2f} (rel {rmin:.3f})  sparse layers {sorted(m.moe.layers)}",
                  flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
