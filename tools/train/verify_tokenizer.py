#!/usr/bin/python3
"""Check tokenizer.json against SentencePiece with the official HF tokenizers (npm `tokenizers`, Rust).

Builds a few thousand test strings (random corpus lines and paragraphs, whitespace runs, tabs, newlines,
emoji, CJK, accents, digits, control bytes, empty string, ChatML markup), computes the expected ids with
SentencePiece (toklib.encode: identical to sp.encode for strings without special tokens), then runs
verify_tokenizer.mjs which encodes each string with tokenizers (no special tokens and with <s>) and
decodes it back. Usage: verify_tokenizer.py WORK TOKENIZER_JSON [N]
"""
import json
import os
import random
import subprocess
import sys

import toklib

HERE = os.path.dirname(os.path.abspath(__file__))


def cases(work, n):
    rng = random.Random(7)
    docs = [json.loads(l) for l in open(os.path.join(work, "corpus", "docs.jsonl"), encoding="utf-8")]
    lines = [l.rstrip("\n") for l in open(os.path.join(work, "corpus", "spm_input.txt"), encoding="utf-8")]
    out = ["", " ", "  ", "\n", "\t", " \n ", "a", "Hello world", " Hello world", "Hello  world ",
           "12345 678.9", "3.14159", "naïve café résumé", "日本語のテキスト", "emoji 😀🎉 ok",
           "Ελληνικά", "ÿþ", "\u0000\u0001", "tab\tsep\tvalues", "line1\nline2\n\nline4",
           "    indented", "trailing   ", "▁already▁has▁metaspace", "<unk>", "<s>", "</s>",
           "<|im_start|>", "<|im_end|>", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
           "a<|im_end|>b", "<s>text</s>", "x <|im_start|> y", "<|im_start|", "Elizabeth looked at"]
    while len(out) < n:
        r = rng.random()
        if r < 0.45:
            out.append(rng.choice(lines))
        elif r < 0.6:
            d = rng.choice(docs)
            out.append(d["text"] if d["kind"] == "text" else toklib.render_chat(d["messages"], False))
        elif r < 0.7:
            l = rng.choice(lines)
            i = rng.randrange(len(l) + 1)
            j = rng.randrange(i, min(len(l), i + 40) + 1)
            out.append(l[i:j])
        elif r < 0.8:
            alphabet = "ab cde\n\t  .,!?0123456789éß€😀中—“”’-_<>|"
            out.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 30))))
        elif r < 0.9:
            out.append("".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(160, 0x2fff),
                                                 rng.randrange(0x1f300, 0x1f64f), 10, 32, 32]))
                               for _ in range(rng.randrange(1, 25))))
        else:
            msgs = [{"role": "user", "content": rng.choice(lines)[:200]}]
            out.append(toklib.render_chat(msgs, True))
    return out


def main():
    work, tj = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    sp = toklib.load(os.path.join(work, "tok", "spm.model"))
    strs = cases(work, n)
    rows = []
    plain_equal_sp = 0
    for s in strs:
        ids = toklib.encode(sp, s)
        if not any(t in s for t in toklib.SPECIAL):
            assert ids == sp.encode(s)
            plain_equal_sp += 1
        rows.append({"text": s, "ids": ids})
    path = os.path.join(work, "tok", "verify_cases.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("%d strings (%d without special tokens, expected ids = sp.encode)" % (len(rows), plain_equal_sp))
    r = subprocess.run(["node", os.path.join(HERE, "verify_tokenizer.mjs"), tj, path], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    summary = [l for l in r.stdout.splitlines() if l.startswith("tokenizers:")]
    res = {"strings": len(rows), "strings_without_special_tokens": plain_equal_sp,
           "oracle": "npm tokenizers@" + json.load(open(os.path.join(HERE, "node_modules", "tokenizers", "package.json")))["version"],
           "result": summary[-1] if summary else None, "passed": r.returncode == 0}
    json.dump(res, open(os.path.join(work, "tok", "verify_result.json"), "w"), indent=1)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
