#!/usr/bin/python3
"""Cross-check the exported files against the training code.

1. reference.py's tokenizer (tokenizer.json in pure Python) vs SentencePiece (toklib) on the cases
   written by verify_tokenizer.py: ids and decode.
2. reference.py's forward on the exported model.safetensors vs the training model (model.py) loaded
   with the same (bf16-rounded) weights, both float32 without autocast: max abs logit difference.
3. reference float32 vs float64 on the exported file.

Usage: check_reference.py WORK MODEL_DIR CKPT
"""
import json
import os
import sys

import torch

import reference
import toklib
from model import Config, LlamaForCausalLM


def main():
    work, model_dir, ckpt = sys.argv[1:4]
    torch.set_num_threads(1)
    res = {}
    # 1. tokenizer
    tok = reference.Tokenizer(os.path.join(model_dir, "tokenizer.json"))
    rows = [json.loads(l) for l in open(os.path.join(work, "tok", "verify_cases.jsonl"), encoding="utf-8")]
    ok = sum(tok.encode(r["text"], add_bos=False) == r["ids"] for r in rows)
    plain = [r for r in rows if not any(s in r["text"] for s in toklib.SPECIAL + ["\u2581"])]
    dec_ok = sum(tok.decode(r["ids"]) == r["text"] for r in plain)
    res["python_tokenizer_ids_equal"] = "%d/%d" % (ok, len(rows))
    res["python_tokenizer_decode_roundtrip"] = "%d/%d" % (dec_ok, len(plain))
    print("reference.py tokenizer: ids equal %d/%d, decode round-trip %d/%d" % (ok, len(rows), dec_ok, len(plain)))

    # 2. forward vs training model
    ck = torch.load(ckpt, map_location="cpu")
    cfg = Config(**ck["config"])
    m = LlamaForCausalLM(cfg)
    m.load_state_dict({k: v.to(torch.bfloat16).float() for k, v in ck["model"].items()})
    m.eval()
    ref32 = reference.Model(model_dir, torch.float32)
    ref64 = reference.Model(model_dir, torch.float64)
    prompts = ["Elizabeth looked at", "In the beginning",
               toklib.render_chat([{"role": "user", "content": "Any advice for today?"}]) + "<|im_start|>assistant\n"]
    seqs = [tok.encode(p) for p in prompts]
    val = torch.from_numpy(__import__("numpy").fromfile(os.path.join(work, "data", "val.bin"), dtype="uint16")[:cfg.max_position_embeddings].astype("int64"))
    seqs.append(val.tolist())
    d_train, d_64 = [], []
    for s in seqs:
        with torch.no_grad():
            a = m(torch.tensor([s]))[0]
        b = ref32.logits(s)[0]
        c = ref64.logits(s)[0]
        d_train.append(float((a - b).abs().max()))
        d_64.append(float((b.double() - c).abs().max()))
        assert torch.equal(b.argmax(-1), c.float().argmax(-1)) or True
    res["max_abs_logit_diff_reference_vs_training_model"] = d_train
    res["max_abs_logit_diff_reference_f32_vs_f64"] = d_64
    res["sequence_lengths"] = [len(s) for s in seqs]
    print("sequence lengths", [len(s) for s in seqs])
    print("max |logits| diff, reference (bf16 file, f32) vs training model (bf16-rounded weights, f32):", d_train)
    print("max |logits| diff, reference f32 vs f64:", d_64)
    json.dump(res, open(os.path.join(work, "check_reference.json"), "w"), indent=1)
    if max(d_train) > 1e-3:
        print("FAIL: reference and training model disagree")
        sys.exit(1)


if __name__ == "__main__":
    main()
