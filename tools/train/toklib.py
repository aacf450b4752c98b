"""Encode text the way the exported tokenizer.json does (Llama-2 "legacy" behaviour), using SentencePiece.

Special tokens are split out first; every remaining non-empty segment is encoded by SentencePiece on its
own (so each gets the "▁" dummy prefix). For text without special tokens this is exactly sp.encode(text).
"""
import re

import sentencepiece as spm

SPECIAL = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
BOS, EOS, IM_START, IM_END = 1, 2, 3, 4
_SPLIT = re.compile("(" + "|".join(re.escape(s) for s in SPECIAL) + ")")


def load(path):
    return spm.SentencePieceProcessor(model_file=path)


def encode(sp, text, add_bos=False):
    ids = [BOS] if add_bos else []
    for seg in _SPLIT.split(text):
        if not seg:
            continue
        if seg in SPECIAL:
            ids.append(SPECIAL.index(seg))
        else:
            ids.extend(sp.encode(seg))
    return ids


def render_chat(messages, add_generation_prompt=False):
    """The ChatML template of tokenizer_config.json, in Python."""
    s = ""
    for m in messages:
        s += "<|im_start|>" + m["role"] + "\n" + m["content"] + "<|im_end|>" + "\n"
    if add_generation_prompt:
        s += "<|im_start|>assistant\n"
    return s
