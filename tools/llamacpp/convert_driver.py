"""Run llama.cpp's convert_hf_to_gguf.py on Debian's python3 (torch 1.13, no transformers).

Shims (see shims/, used only where the real package is missing): a `transformers` stub
that reads config.json / tokenizer.json, a no-op `tqdm`, a `sentencepiece` placeholder, sentinels for the float8 dtypes torch 1.13 lacks (our checkpoints never contain
float8 tensors), and a fallback for the pre-tokenizer hash check: the converter identifies
BPE pre-tokenizers by hashing real tokenizer output, which the stub cannot produce, so an
unknown hash maps to $STRATA_TOKPRE (default "qwen2"). Tokenizer metadata does not affect
logits. Usage: convert_driver.py LLAMA_SRC_DIR [convert_hf_to_gguf.py args...]
"""
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(sys.argv[1])
sys.path.insert(0, src)
sys.path.insert(1, os.path.join(src, "gguf-py"))
sys.path.append(os.path.join(here, "shims"))  # last: real Debian packages win if installed
os.environ.setdefault("NO_LOCAL_GGUF", "1")  # we put gguf-py on the path ourselves

import torch  # noqa: E402

for name in ("float8_e4m3fn", "float8_e5m2"):
    if not hasattr(torch, name):
        setattr(torch, name, type(name, (), {})())  # unique sentinel, never a real dtype

from conversion import base  # noqa: E402

_orig_pre = base.TextModel.get_vocab_base_pre


def _get_vocab_base_pre(self, tokenizer):
    try:
        return _orig_pre(self, tokenizer)
    except NotImplementedError:
        return os.environ.get("STRATA_TOKPRE", "qwen2")


base.TextModel.get_vocab_base_pre = _get_vocab_base_pre
sys.argv = [os.path.join(src, "convert_hf_to_gguf.py")] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
