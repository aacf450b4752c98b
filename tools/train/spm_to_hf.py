#!/usr/bin/python3
"""Convert a SentencePiece BPE model (byte fallback) into a Llama-2-style Hugging Face tokenizer.json.

The BPE merges are recovered from the vocabulary: every split of a normal piece into two pieces that
are both in the vocabulary is a merge, ranked by the merged piece's score (SentencePiece BPE merges the
adjacent pair whose result scores highest; HF BPE merges the pair of lowest rank), ties by the ids of
the two halves.

Usage: spm_to_hf.py SPM_MODEL OUT_TOKENIZER_JSON
"""
import json
import sys

import sentencepiece as spm

SPECIAL = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]


def convert(model_path):
    sp = spm.SentencePieceProcessor(model_file=model_path)
    n = sp.get_piece_size()
    vocab = {}
    normal = []  # (id, piece) of pieces that BPE can produce by merging
    for i in range(n):
        p = sp.id_to_piece(i)
        vocab[p] = i
        if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i) or sp.is_byte(i)) and p not in SPECIAL:
            normal.append((i, p))
    for i, p in enumerate(SPECIAL):
        assert vocab[p] == i, (p, vocab.get(p))
    merges = []
    for i, p in normal:
        score = sp.get_score(i)
        for k in range(1, len(p)):
            a, b = p[:k], p[k:]
            if a in vocab and b in vocab and a not in SPECIAL and b not in SPECIAL:
                merges.append((-score, i, vocab[a], vocab[b], a, b))
    merges.sort()
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": p, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for i, p in enumerate(SPECIAL)
        ],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "\u2581"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
            ],
        },
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "<s>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": "<s>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "<s>", "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        },
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [a + " " + b for _, _, _, _, a, b in merges],
        },
    }
    return tok


def main():
    tok = convert(sys.argv[1])
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")
    print("vocab %d, merges %d -> %s" % (len(tok["model"]["vocab"]), len(tok["model"]["merges"]), sys.argv[2]))


if __name__ == "__main__":
    main()
