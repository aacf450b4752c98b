#!/usr/bin/python3
"""Self-checks of the reference (run by hand; results are recorded in tests/golden/README.md).

For each tiny architecture (seed 1, 96-token sequence):
  1. f32 compute vs f64 compute on the same f32 checkpoint;
  2. the GGUF path (llama.cpp's converter, f32) vs the safetensors path;
  3. llama.cpp (prebuilt, F32 KV cache, 1 thread) on that f32 GGUF vs the reference, and
     on the q8_0 GGUF vs the reference reading the same q8_0 GGUF.
Usage: validate_reference.py WORKDIR   (needs tools/llamacpp set up; see its README)
"""
import os
import random
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import reference as R  # noqa: E402

LLAMACPP = os.path.join(ROOT, "tools", "llamacpp")


def rel_err(a, b):
    """max over positions of max|a-b| / max|b|."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float((np.abs(a - b).max(1) / np.abs(b).max(1)).max())


def logits(model, ids, dtype=torch.float64):
    return R.forward(R.load_model(model).to(dtype), ids[:-1]).numpy()


def llama_logits(gguf, ids, work):
    out = os.path.join(work, "llama.bin")
    subprocess.run([os.path.join(LLAMACPP, "llama_run.sh"), "logits", gguf, out,
                    ",".join(map(str, ids))], check=True)
    return R.read_logits(out)


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    py = sys.executable
    for arch in ["llama", "llama-tied", "qwen2", "qwen3", "mistral"]:
        d = os.path.join(work, arch)
        subprocess.run([py, os.path.join(HERE, "make_checkpoint.py"), "--arch", arch,
                        "--dtype", "f32", "--out", d], check=True)
        m = R.load_model(d)
        rng = random.Random(7)
        ids = [rng.randrange(3, m.vocab - 8) for _ in range(97)]
        ref = logits(d, ids)
        line = [f"{arch:10s}", f"f32-compute {rel_err(logits(d, ids, torch.float32), ref):.1e}"]
        g32 = d + "-f32.gguf"
        subprocess.run([os.path.join(LLAMACPP, "convert.sh"), d, g32, "f32"], check=True)
        gref = logits(g32, ids)
        line.append(f"gguf-f32-ref {rel_err(gref, ref):.1e}")
        lc = llama_logits(g32, ids, work)
        if arch == "mistral":  # llama.cpp's GGUF has no sliding window: compare like with like
            line.append(f"llama.cpp-vs-gguf-ref(no window) {rel_err(lc, gref):.1e}")
        line.append(f"llama.cpp-f32 {rel_err(lc, ref):.1e} argmax-eq "
                    f"{bool((lc.argmax(1) == ref.argmax(1)).all())}")
        if arch in ("llama", "qwen2", "qwen3"):
            g8 = d + "-q8_0.gguf"
            subprocess.run([os.path.join(LLAMACPP, "convert.sh"), d, g8, "q8_0"], check=True)
            ref8 = logits(g8, ids)
            lc8 = llama_logits(g8, ids, work)
            line.append(f"q8_0-vs-f32-ref {rel_err(ref8, ref):.1e}")
            line.append(f"llama.cpp-q8_0 {rel_err(lc8, ref8):.1e}")
        print("  ".join(line), flush=True)


if __name__ == "__main__":
    main()
