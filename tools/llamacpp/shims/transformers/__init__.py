"""Stub of the few `transformers` entry points llama.cpp's convert_hf_to_gguf.py uses.

python3-transformers is not in Debian. The converter only needs:
  AutoConfig.from_pretrained(dir).to_dict()   -> config.json
  AutoTokenizer.from_pretrained(dir)          -> vocab, added tokens, specials
This reads tokenizer.json / tokenizer_config.json directly. encode() only knows
added tokens (the converter's pre-tokenizer hash check is bypassed by convert.py).
"""
import json
import os


class _Config:
    def __init__(self, d):
        self._d = d

    def to_dict(self):
        return dict(self._d)

    def __getattr__(self, name):
        try:
            return self._d[name]
        except KeyError as e:
            raise AttributeError(name) from e


class AutoConfig:
    @staticmethod
    def from_pretrained(path, **_):
        with open(os.path.join(str(path), "config.json"), encoding="utf-8") as f:
            return _Config(json.load(f))


class _AddedToken:
    def __init__(self, d):
        self.content = d["content"]
        self.special = d.get("special", False)
        self.normalized = d.get("normalized", True)
        self.lstrip = d.get("lstrip", False)
        self.rstrip = d.get("rstrip", False)
        self.single_word = d.get("single_word", False)

    def __str__(self):
        return self.content


class _Tokenizer:
    is_fast = True

    def __init__(self, path):
        path = str(path)
        with open(os.path.join(path, "tokenizer.json"), encoding="utf-8") as f:
            tj = json.load(f)
        cfg = {}
        cfg_path = os.path.join(path, "tokenizer_config.json")
        if os.path.exists(cfg_path):
            with open(cfg_path, encoding="utf-8") as f:
                cfg = json.load(f)
        self._base = dict(tj["model"]["vocab"])
        self.vocab_size = len(self._base)
        self.added_tokens_decoder = {a["id"]: _AddedToken(a) for a in tj.get("added_tokens", [])}
        self.vocab = dict(self._base)
        for i, a in self.added_tokens_decoder.items():
            self.vocab[a.content] = i
        self._id_to_tok = {i: t for t, i in self.vocab.items()}
        specials = []
        for key in ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token"):
            v = cfg.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            if v and v not in specials:
                specials.append(v)
        for a in self.added_tokens_decoder.values():
            if a.special and a.content not in specials:
                specials.append(a.content)
        self.all_special_tokens = specials
        self.all_special_ids = [self.vocab[t] for t in specials if t in self.vocab]
        self.chat_template = cfg.get("chat_template")

    def __len__(self):
        return len(self.vocab)

    def get_vocab(self):
        return dict(self.vocab)

    def get_added_vocab(self):
        return {a.content: i for i, a in self.added_tokens_decoder.items()}

    def encode(self, text, add_special_tokens=True, **_):
        if text in self.vocab:
            return [self.vocab[text]]
        return []

    def decode(self, ids, **_):
        if isinstance(ids, int):
            ids = [ids]
        return "".join(self._id_to_tok.get(i, "") for i in ids)

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, int):
            return self._id_to_tok[ids]
        return [self._id_to_tok[i] for i in ids]


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path, **_):
        return _Tokenizer(path)
