#!/usr/bin/env python3
"""The bundled model through `strata generate`, against the values its
training pipeline recorded with an independent PyTorch forward pass
(models/strata-tiny/golden.json, float64 on the bf16 weights):

- tokenization of each prompt (with <s>) equals the reference tokenizer's;
- greedy continuations equal the reference's for as long as the reference's
  top-1/top-2 logit margin stays above what bf16 kernels can move
  (tests/golden/README.md bounds that at 2e-2 of the largest logit);
- the chat prompt's greedy reply ends on <|im_end|> exactly as recorded.

Usage: bundled_model_test.py STRATA_BINARY MODEL_DIR
"""
import json
import subprocess
import sys

MIN_MARGIN = 0.1  # logits; below this a bf16 engine may legitimately differ


def generate(strata, model, args):
    out = subprocess.run([strata, "generate", "--model", model, "--temperature", "0", "--json"]
                         + args, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def trusted_prefix(margins):
    n = 0
    for m in margins:
        if m < MIN_MARGIN:
            break
        n += 1
    return n


def main():
    strata, model = sys.argv[1], sys.argv[2]
    golden = json.load(open(f"{model}/golden.json"))
    failures = 0
    for p in golden["prompts"]:
        n = trusted_prefix(p["greedy_top1_top2_logit_margin"])
        got = generate(strata, model, ["--prompt", p["text"], "--max-tokens", "32",
                                       "--ignore-eos"])
        ok_ids = got["prompt_ids"] == p["ids_with_bos"]
        ok_out = got["output_ids"][:n] == p["greedy_32"][:n]
        print(f"{p['text']!r}: prompt ids {'ok' if ok_ids else 'DIFFER'}; "
              f"greedy {'ok' if ok_out else 'DIFFER'} over the first {n} trusted steps")
        if not ok_ids:
            print(f"  want {p['ids_with_bos']}\n  got  {got['prompt_ids']}")
        if not ok_out:
            print(f"  want {p['greedy_32'][:n]}\n  got  {got['output_ids'][:n]}")
        failures += (not ok_ids) + (not ok_out)
    chat = golden["chat"]
    got = generate(strata, model, ["--prompt-ids", ",".join(map(str, chat["ids_with_bos"])),
                                   "--max-tokens", "64"])
    ok_chat = got["output_ids"] == chat["greedy_until_eos"]
    print(f"chat reply {'ok' if ok_chat else 'DIFFER'}: {chat['greedy_text']!r}")
    if not ok_chat:
        print(f"  want {chat['greedy_until_eos']}\n  got  {got['output_ids']}")
    failures += not ok_chat
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
