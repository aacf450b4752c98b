#!/usr/bin/python3
"""Validation loss and perplexity of an exported model, computed from its model.safetensors file.

Uses reference.py (its own safetensors parser and forward, float32 compute on the stored bf16 weights)
on the held-out split WORK/data/val.bin (1% of the documents, never trained on), in non-overlapping
windows of max_position_embeddings tokens; every window predicts all its positions but the first.
Writes WORK/eval_val.json. Usage: eval_val.py WORK MODEL_DIR [MAX_WINDOWS]
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch

import reference


def main():
    work, model_dir = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    t0 = time.time()
    model = reference.Model(model_dir, torch.float32)
    T = model.cfg["max_position_embeddings"]
    val = np.fromfile(os.path.join(work, "data", "val.bin"), dtype=np.uint16).astype(np.int64)
    n = (len(val) - 1) // T
    if len(sys.argv) > 3:  # optional cap on windows, for quick tests
        n = min(n, int(sys.argv[3]))
    tot, cnt = 0.0, 0
    for i in range(0, n, 4):
        rows = list(range(i, min(n, i + 4)))
        x = torch.stack([torch.from_numpy(val[j * T:(j + 1) * T]) for j in rows])
        y = torch.stack([torch.from_numpy(val[j * T + 1:(j + 1) * T + 1]) for j in rows])
        logits = model.logits(x)
        tot += float(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).double(), y.reshape(-1),
                                                       reduction="sum"))
        cnt += y.numel()
    loss = tot / cnt
    res = {"val_loss": loss, "val_ppl": math.exp(loss), "val_tokens_scored": cnt, "window": T,
           "file": os.path.join(model_dir, "model.safetensors"), "weights_dtype": model.cfg.get("torch_dtype"),
           "compute": "float32 (reference.py)", "seconds": time.time() - t0}
    print(json.dumps(res, indent=1))
    json.dump(res, open(os.path.join(work, "eval_val.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
