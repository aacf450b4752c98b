#!/usr/bin/python3
"""Tokenize the corpus into packed uint16 token streams for training.

Each document becomes <s> ids </s>; a chat document is its ChatML rendering (the chat template of
tokenizer_config.json) encoded like tokenizer.json does (toklib.encode). Documents are shuffled with a
fixed seed; 1% of them are held out for validation. Writes WORK/data/{train,val}.bin and meta.json.
Usage: prepare_data.py WORK
"""
import json
import os
import random
import sys

import numpy as np

import toklib

SEED = 1234
VAL_FRACTION = 0.01


def main():
    work = sys.argv[1]
    sp = toklib.load(os.path.join(work, "tok", "spm.model"))
    docs = [json.loads(l) for l in open(os.path.join(work, "corpus", "docs.jsonl"), encoding="utf-8")]
    rng = random.Random(SEED)
    rng.shuffle(docs)
    n_val = max(1, int(len(docs) * VAL_FRACTION))
    splits = {"val": docs[:n_val], "train": docs[n_val:]}
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    meta = {"seed": SEED, "val_fraction": VAL_FRACTION}
    for name, ds in splits.items():
        out = []
        per_src = {}
        chars = 0
        for d in ds:
            text = d["text"] if d["kind"] == "text" else toklib.render_chat(d["messages"])
            chars += len(text)
            ids = [toklib.BOS] + toklib.encode(sp, text) + [toklib.EOS]
            out.extend(ids)
            k = d["src"] + ":" + d["kind"]
            per_src[k] = per_src.get(k, 0) + len(ids)
        arr = np.array(out, dtype=np.uint16)
        arr.tofile(os.path.join(work, "data", name + ".bin"))
        meta[name] = {"docs": len(ds), "tokens": int(arr.size), "chars": chars, "tokens_by_source": per_src}
        print(name, len(ds), "docs", arr.size, "tokens", "%.2f chars/token" % (chars / arr.size))
    json.dump(meta, open(os.path.join(work, "data", "meta.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
