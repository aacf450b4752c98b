"""Stand-in for sentencepiece when python3-sentencepiece is not installed.

llama.cpp's converter imports SentencePieceProcessor before checking whether
tokenizer.model exists; our test checkpoints have none, so it then falls back to
tokenizer.json. Loading a real .model file with this stub fails loudly."""


class SentencePieceProcessor:
    def __init__(self, *_, **__):
        raise ImportError("sentencepiece is not installed: apt-get install python3-sentencepiece")
