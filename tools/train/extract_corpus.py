#!/usr/bin/python3
"""Extract the training corpus for strata-tiny from installed Debian packages.

Writes WORK/corpus/docs.jsonl: one JSON object per document,
  {"src": <source>, "kind": "text", "text": ...}            plain text document
  {"src": <source>, "kind": "chat", "messages": [...]}      one ChatML conversation
and WORK/corpus/spm_input.txt (plain text, one paragraph per line) for spm_train.

Sources (see MODEL_CARD.md for licences):
  r-cran-janeaustenr  Jane Austen's six novels (dumped with Rscript)
  r-cran-tokenizers   Moby Dick (the `mobydick` data set, Gutenberg header/footer removed)
  sword-text-web      World English Bible (mod2imp from libsword-utils, OSIS markup stripped)
  fortunes, fortunes-min, fortune-anarchism   fortune cookie files
  dict-devil          Ambrose Bierce, The Devil's Dictionary (dictd format)
"""
import argparse
import base64
import gzip
import html
import json
import os
import random
import re
import subprocess
import sys

SEED = 1234


def rscript(expr):
    return subprocess.run(["Rscript", "-e", expr], check=True, capture_output=True).stdout.decode("utf-8")


def clean_ws(s):
    s = s.replace("\r", "").replace("\ufeff", "")
    s = re.sub(r"[ \t]+", " ", s)
    return s.strip()


def paragraphs(lines):
    """Join hard-wrapped lines into paragraphs (blank line = paragraph break)."""
    out, cur = [], []
    for ln in lines:
        ln = ln.rstrip()
        if ln.strip() == "":
            if cur:
                out.append(clean_ws(" ".join(x.strip() for x in cur)))
                cur = []
        else:
            cur.append(ln)
    if cur:
        out.append(clean_ws(" ".join(x.strip() for x in cur)))
    return [p for p in out if p]


def group(paras, max_chars):
    """Group consecutive paragraphs into documents of at most ~max_chars (joined by newlines)."""
    docs, cur, n = [], [], 0
    for p in paras:
        if cur and n + len(p) > max_chars:
            docs.append("\n".join(cur))
            cur, n = [], 0
        cur.append(p)
        n += len(p) + 1
    if cur:
        docs.append("\n".join(cur))
    return docs


def split_at_headings(paras, heading_re, max_chars):
    """Documents from paragraphs: a heading matching heading_re ends the current
    document (the heading itself is dropped); long runs are grouped by size."""
    docs, chunk = [], []
    for p in paras:
        if re.match(heading_re, p):
            if chunk:
                docs += group(chunk, max_chars)
            chunk = []
            continue
        chunk.append(p)
    if chunk:
        docs += group(chunk, max_chars)
    return docs


def austen(max_chars):
    txt = rscript('library(janeaustenr); b <- austen_books(); '
                  'for (bk in levels(b$book)) { cat("@@@BOOK ", bk, "\\n", sep=""); '
                  'cat(b$text[b$book == bk], sep="\\n"); cat("\\n") }')
    docs = []
    for part in txt.split("@@@BOOK ")[1:]:
        lines = part.split("\n")[1:]
        paras = paragraphs(lines)
        # chapter headings ("CHAPTER 1") start a new document
        docs += split_at_headings(paras, r"^(CHAPTER|Chapter) [0-9IVXLC]+\.?$", max_chars)
    return docs


def mobydick(max_chars):
    txt = rscript("library(tokenizers); cat(mobydick)")
    start = txt.index("ETYMOLOGY.")
    end = txt.index("*** END OF THIS PROJECT GUTENBERG EBOOK")
    paras = paragraphs(txt[start:end].split("\n"))
    return split_at_headings(paras, r"^(CHAPTER \d+\..*|Epilogue|EPILOGUE)$", max_chars)


def strip_osis(s):
    s = re.sub(r"<note\b[^>]*/>", "", s)
    s = re.sub(r"<note\b.*?</note>", "", s, flags=re.S)
    s = re.sub(r"<title\b.*?</title>", "", s, flags=re.S)
    s = re.sub(r"<[^>]+>", " ", s)
    s = html.unescape(s)
    s = re.sub(r"\s+", " ", s)
    s = re.sub(r" ([,.;:?!’”])", r"\1", s)
    s = re.sub(r"([“‘]) ", r"\1", s)
    return s.strip()


def bible(verses_per_doc):
    out = subprocess.run(["mod2imp", "engWEB2015eb"], check=True, capture_output=True).stdout.decode("utf-8")
    docs = []
    cur_key, cur = None, []
    for entry in out.split("$$$")[1:]:
        head, _, body = entry.partition("\n")
        m = re.match(r"^(.+) (\d+):(\d+)$", head.strip())
        if not m or m.group(2) == "0" or m.group(3) == "0":
            continue  # module/testament/book/chapter headings and the preface
        text = strip_osis(body)
        if not text:
            continue
        key = (m.group(1), m.group(2))
        if key != cur_key or len(cur) >= verses_per_doc:
            if cur:
                docs.append(" ".join(cur))
            cur_key, cur = key, []
        cur.append(text)
    if cur:
        docs.append(" ".join(cur))
    return docs


FORTUNE_DIR = "/usr/share/games/fortunes"
FORTUNE_SKIP = {"ascii-art", "translate-me"}  # pictures, and a file of non-English text


def fortunes():
    docs = []
    for name in sorted(os.listdir(FORTUNE_DIR)):
        path = os.path.join(FORTUNE_DIR, name)
        if "." in name or name in FORTUNE_SKIP or os.path.isdir(path) or os.path.islink(path):
            continue
        raw = open(path, "rb").read().decode("utf-8", errors="replace")
        for f in re.split(r"\n%\n", "\n" + raw + "\n"):
            lines = [ln.rstrip().replace("\t", "    ") for ln in f.split("\n")]
            while lines and not lines[0].strip():
                lines.pop(0)
            while lines and not lines[-1].strip():
                lines.pop()
            text = "\n".join(lines)
            text = re.sub(r"_\x08|\x08.", "", text)  # nroff-style underlining/overstrike
            text = re.sub(r"[\x00-\x09\x0b-\x1f\x7f]", "", text)
            if not text or "\ufffd" in text or len(text) > 2000:
                continue
            # drop pictures: mostly non-letters
            letters = sum(c.isalpha() for c in text)
            if letters < 0.5 * len(text.replace(" ", "").replace("\n", "")):
                continue
            docs.append((name, text))
    return docs


DICT_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64num(s):
    n = 0
    for c in s:
        n = n * 64 + DICT_B64.index(c)
    return n


def devil():
    data = gzip.open("/usr/share/dictd/devil.dict.dz").read()
    entries = []
    seen = set()
    for ln in open("/usr/share/dictd/devil.index", encoding="utf-8"):
        word, off, length = ln.rstrip("\n").split("\t")
        if word.startswith("00database"):
            continue
        off, length = b64num(off), b64num(length)
        if off in seen:
            continue
        seen.add(off)
        body = data[off:off + length].decode("utf-8", errors="replace")
        body = re.sub(r"[{}]", "", body)
        lines = [ln.rstrip() for ln in body.split("\n")]
        # unwrap prose lines but keep verse (indented) lines as they are
        out, cur = [], []
        for l in lines:
            if not l.strip():
                if cur:
                    out.append(" ".join(cur)); cur = []
                continue
            if l.startswith("    "):
                if cur:
                    out.append(" ".join(cur)); cur = []
                out.append(l.strip())
            else:
                cur.append(l.strip())
        if cur:
            out.append(" ".join(cur))
        text = "\n".join(re.sub(r"[ \t]+", " ", x).strip() for x in out)
        m = re.match(r"^([A-Z][A-Z '\-]+),", text)
        if not m:
            continue
        entries.append((m.group(1).strip(), text))
    return entries


CHAT_PROMPTS = [
    "Tell me a fortune.", "Any advice for today?", "Say something wise.", "Tell me something.",
    "Give me a quote.", "What do you think?", "Hello!", "Hi, how are you?", "Tell me a joke.",
    "Share a thought.", "Cheer me up.", "What should I know?", "Say something interesting.",
    "Can you give me some advice?", "What is on your mind?", "Tell me a saying.",
]
SYSTEM_PROMPTS = [
    "You are a helpful assistant.", "You are Strata, a small language model.",
    "You are a witty assistant.", "Answer briefly.",
]


def chat_doc(rng, user, assistant):
    msgs = []
    if rng.random() < 0.3:
        msgs.append({"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
    msgs.append({"role": "user", "content": user})
    msgs.append({"role": "assistant", "content": assistant})
    return msgs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--max_chars", type=int, default=2400)
    args = ap.parse_args()
    rng = random.Random(SEED)
    os.makedirs(os.path.join(args.work, "corpus"), exist_ok=True)
    docs = []
    stats = {}

    def add(src, kind, **kw):
        d = {"src": src, "kind": kind}
        d.update(kw)
        docs.append(d)
        n = len(kw.get("text", "")) or sum(len(m["content"]) for m in kw["messages"])
        s = stats.setdefault(src + ":" + kind, [0, 0])
        s[0] += 1
        s[1] += n

    for t in austen(args.max_chars):
        add("austen", "text", text=t)
    for t in mobydick(args.max_chars):
        add("mobydick", "text", text=t)
    for t in bible(12):
        add("web", "text", text=t)
    fs = fortunes()
    for name, t in fs:
        src = "fortune-anarchism" if name == "anarchism" else "fortunes"
        add(src, "text", text=t)
        if rng.random() < 0.5:
            if rng.random() < 0.15:
                # two-turn conversation
                _, t2 = rng.choice(fs)
                msgs = chat_doc(rng, rng.choice(CHAT_PROMPTS), t)
                msgs += [{"role": "user", "content": rng.choice(CHAT_PROMPTS)},
                         {"role": "assistant", "content": t2}]
                add(src, "chat", messages=msgs)
            else:
                add(src, "chat", messages=chat_doc(rng, rng.choice(CHAT_PROMPTS), t))
    for word, t in devil():
        add("devil", "text", text=t)
        if rng.random() < 0.5:
            q = rng.choice(["What is %s?", "Define %s.", "What does %s mean?", "%s?"]) % word.lower()
            q = q[0].upper() + q[1:]
            add("devil", "chat", messages=chat_doc(rng, q, t))

    with open(os.path.join(args.work, "corpus", "docs.jsonl"), "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    # tokenizer training text: plain documents only, one paragraph/line per line
    with open(os.path.join(args.work, "corpus", "spm_input.txt"), "w", encoding="utf-8") as f:
        for d in docs:
            if d["kind"] == "text":
                for ln in d["text"].split("\n"):
                    if ln.strip():
                        f.write(ln + "\n")
    for k, (n, c) in sorted(stats.items()):
        print("%-26s %7d docs %10d chars" % (k, n, c))
    print("total docs", len(docs))
    json.dump(stats, open(os.path.join(args.work, "corpus", "stats.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
