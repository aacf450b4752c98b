#!/usr/bin/python3
"""Produce sample outputs and golden values from the exported files (reference.py only) and write
MODEL_DIR/golden.json and MODEL_DIR/MODEL_CARD.md.

Usage: make_card.py WORK MODEL_DIR
"""
import json
import math
import os
import sys

import torch

import reference

HERE = os.path.dirname(os.path.abspath(__file__))

SAMPLE_PROMPTS = ["Elizabeth looked at", "The whale", "Jesus said to them,",
                  "It is a truth universally acknowledged"]
GREEDY_PROMPTS = ["Elizabeth looked at", "In the beginning", "The whale"]
CHATS = ["Any advice for today?", "What is a cynic?", "Tell me a joke."]
GOLDEN_PROMPTS = ["Elizabeth looked at", "In the beginning", "The whale", "Call me Ishmael."]


def main():
    work, model_dir = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    tok = reference.Tokenizer(os.path.join(model_dir, "tokenizer.json"))
    m32 = reference.Model(model_dir, torch.float32)
    m64 = reference.Model(model_dir, torch.float64)
    gc = json.load(open(os.path.join(model_dir, "generation_config.json")))
    eos = set(gc["eos_token_id"])
    samp = dict(temperature=gc["temperature"], top_k=gc["top_k"], top_p=gc["top_p"])

    # ---- golden values (float64 reference; float32 greedy must agree)
    golden = {"note": "Computed by tools/train/reference.py from the files in this directory (bf16 weights "
                      "upcast to float64). greedy_* continue the prompt encoded with <s>.",
              "prompts": []}
    for p in GOLDEN_PROMPTS:
        ids = tok.encode(p, add_bos=True)
        g64 = reference.generate(m64, ids, 32, set())
        g32 = reference.generate(m32, ids, 32, set())
        last = m64.logits(ids)[0, -1]
        full = m64.logits(ids + g64)[0]
        margins = []
        for k in range(len(g64)):
            t2 = torch.topk(full[len(ids) - 1 + k], 2).values
            margins.append(round(float(t2[0] - t2[1]), 4))
        top = torch.topk(last, 10)
        golden["prompts"].append({
            "text": p, "ids_with_bos": ids, "ids_without_bos": tok.encode(p, add_bos=False),
            "greedy_32": g64, "greedy_32_text": tok.decode(g64), "greedy_f32_equal": g32 == g64,
            "greedy_top1_top2_logit_margin": margins,
            "last_logits_first8": [round(float(v), 6) for v in last[:8]],
            "last_logits_top10": [[int(i), round(float(v), 6)] for v, i in zip(top.values, top.indices)],
        })
    chat_text = reference.render_chat(model_dir, [{"role": "user", "content": "Any advice for today?"}])
    cids = tok.encode(chat_text, add_bos=True)
    cg = reference.generate(m64, cids, 64, eos)
    golden["chat"] = {"messages": [{"role": "user", "content": "Any advice for today?"}],
                      "rendered": chat_text, "ids_with_bos": cids, "greedy_until_eos": cg,
                      "greedy_text": tok.decode(cg)}
    json.dump(golden, open(os.path.join(model_dir, "golden.json"), "w"), indent=1, ensure_ascii=False)

    # ---- samples
    samples = []
    for p in GREEDY_PROMPTS:
        out = reference.generate(m32, tok.encode(p), 40, eos)
        samples.append(("greedy", p, tok.decode(out)))
    for i, p in enumerate(SAMPLE_PROMPTS):
        out = reference.generate(m32, tok.encode(p), 64, eos, seed=i, **samp)
        samples.append(("T=%.1f top_k=%d top_p=%.2f seed %d" % (samp["temperature"], samp["top_k"], samp["top_p"], i),
                        p, tok.decode(out)))
    for i, q in enumerate(CHATS):
        ids = tok.encode(reference.render_chat(model_dir, [{"role": "user", "content": q}]))
        out = reference.generate(m32, ids, 80, eos)
        samples.append(("chat, greedy", q, tok.decode(out) + (" ⟨<|im_end|>⟩" if out and out[-1] == 4 else "")))
        out = reference.generate(m32, ids, 80, eos, seed=100 + i, **samp)
        samples.append(("chat, sampled seed %d" % (100 + i), q,
                        tok.decode(out) + (" ⟨<|im_end|>⟩" if out and out[-1] == 4 else "")))
    json.dump(samples, open(os.path.join(work, "samples.json"), "w"), indent=1, ensure_ascii=False)

    # ---- card
    meta = json.load(open(os.path.join(work, "data", "meta.json")))
    corpus = json.load(open(os.path.join(work, "corpus", "stats.json")))
    log = []
    for l in open(os.path.join(work, "ckpt", "log.jsonl")):
        e = json.loads(l)
        if e["event"] == "resume":  # drop what the stopped run did after the checkpoint it resumed from
            log = [x for x in log if x["event"] in ("start", "resume") or x["step"] <= e["step"]]
        log.append(e)
    start = [e for e in log if e["event"] == "start"][0]
    resumes = [e for e in log if e["event"] == "resume"]
    done = [e for e in log if e["event"] == "done"][-1]
    evals = [e for e in log if e["event"] == "eval"]
    ev = json.load(open(os.path.join(work, "eval_val.json")))
    vt = json.load(open(os.path.join(work, "tok", "verify_result.json")))
    cr = json.load(open(os.path.join(work, "check_reference.json")))
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    a = (resumes[-1] if resumes else start)["args"]
    size = os.path.getsize(os.path.join(model_dir, "model.safetensors"))

    src_tok = {}
    for k, v in meta["train"]["tokens_by_source"].items():
        s = k.split(":")[0]
        src_tok[s] = src_tok.get(s, 0) + v
    src_chars = {}
    for k, (n, c) in corpus.items():
        s = k.split(":")[0]
        src_chars[s] = src_chars.get(s, 0) + c

    L = []
    w = L.append
    w("# strata-tiny\n")
    w("A 6.5 M-parameter Llama-architecture language model trained from scratch on CPU for Strata, on "
      "public-domain and freely licensed English text shipped in Debian packages. It is the engine's "
      "embedded default model, demo and test fixture. Its text is fluent at the phrase level, in the "
      "style of 19th-century novels, the World English Bible and fortune cookies, but it is not coherent "
      "over a paragraph and it knows nothing useful: **it is not an assistant**.\n")
    w("## Model\n")
    w("| key | value |\n|---|---|")
    rows = [("architecture", "LlamaForCausalLM: RMSNorm, rotate-half RoPE (theta %g), SwiGLU, grouped-query attention, no biases" % cfg["rope_theta"]),
            ("hidden / intermediate", "%d / %d" % (cfg["hidden_size"], cfg["intermediate_size"])),
            ("layers / heads / kv heads / head_dim", "%d / %d / %d / %d" % (cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"])),
            ("vocabulary", "%d (SentencePiece BPE with byte fallback)" % cfg["vocab_size"]),
            ("context", "%d tokens (max_position_embeddings; trained at sequence length %d)" % (cfg["max_position_embeddings"], a["seq_len"])),
            ("tie_word_embeddings", "false (lm_head.weight stored)"),
            ("parameters", "%d (%.2f M; embeddings %d, lm_head %d)" % (start["params"], start["params"] / 1e6, cfg["vocab_size"] * cfg["hidden_size"], cfg["vocab_size"] * cfg["hidden_size"])),
            ("weights", "model.safetensors, BF16, %d bytes" % size),
            ("special tokens", "`<unk>`=0, `<s>`=1 (BOS), `</s>`=2 (EOS), `<|im_start|>`=3, `<|im_end|>`=4"),
            ("stop tokens", "generation_config eos_token_id [2, 4]"),
            ("sampling defaults", "temperature %.1f, top_k %d, top_p %.2f" % (gc["temperature"], gc["top_k"], gc["top_p"]))]
    for k, v in rows:
        w("| %s | %s |" % (k, v))
    w("")
    w("## Training data\n")
    w("All text comes from Debian 12 packages (extracted by `tools/train/extract_corpus.py`). Licences were "
      "read from each package's `/usr/share/doc/<package>/copyright`.\n")
    w("| source | Debian package | licence of the text | characters | training tokens |\n|---|---|---|---|---|")
    info = [("austen", "Jane Austen, the six novels", "r-cran-janeaustenr", "public domain (texts); package MIT"),
            ("mobydick", "Herman Melville, Moby Dick (Gutenberg header/licence removed)", "r-cran-tokenizers", "public domain (text); package MIT"),
            ("web", "World English Bible", "sword-text-web", "public domain (\"World English Bible\" is a trademark of eBible.org)"),
            ("fortunes", "fortune cookie files", "fortunes, fortunes-min", "BSD-style, 3-clause (fortune-mod's collection, per its copyright file; quotations of mixed origin)"),
            ("fortune-anarchism", "BLAG anarchism fortunes", "fortune-anarchism", "public domain (dedicated by the BLAG Fortune Assortment Project)"),
            ("devil", "Ambrose Bierce, The Devil's Dictionary", "dict-devil", "public domain (copyright expired)")]
    for s, what, pkg, lic in info:
        w("| %s | %s | %s | %d | %d |" % (what, pkg, lic, src_chars.get(s, 0), src_tok.get(s, 0)))
    w("")
    w("Documents are `<s> text </s>`: a group of consecutive paragraphs of a novel (up to about 2,400 "
      "characters, within a chapter), up to 12 Bible verses of one chapter, one fortune, or one dictionary "
      "entry. About half of the fortunes and dictionary entries also appear as a ChatML conversation (the "
      "chat template below; a short user request, sometimes a system message, the fortune or definition as "
      "the assistant turn, 15%% of them with a second turn), so that chat requests get a fortune-like reply "
      "ending in `<|im_end|>`. Documents were shuffled with a fixed seed and 1%% of them (%d documents, %d "
      "tokens) held out for validation; the training split has %d documents and %d tokens (%.2f characters "
      "per token).\n" % (meta["val"]["docs"], meta["val"]["tokens"], meta["train"]["docs"], meta["train"]["tokens"],
                         meta["train"]["chars"] / meta["train"]["tokens"]))
    w("## Tokenizer\n")
    w("SentencePiece BPE trained with Debian's `spm_train` (sentencepiece 0.1.97) on the plain-text part of "
      "the corpus: vocabulary 4096, byte fallback, split digits, identity normalization, dummy prefix, "
      "`<|im_start|>` and `<|im_end|>` as user-defined symbols. `tools/train/spm_to_hf.py` converts it to a "
      "Llama-2-style `tokenizer.json` (BPE model with `byte_fallback` and `fuse_unk`, merges recovered from "
      "the vocabulary and ranked by the merged piece's score; normalizer Prepend(\"▁\") + Replace(\" \"→\"▁\"); "
      "no pre-tokenizer; TemplateProcessing adding `<s>`; decoder Replace/ByteFallback/Fuse/Strip). "
      "`tokenizer.model` is the SentencePiece model itself.\n")
    w("As in Llama 2 (\"legacy\" behaviour), special tokens are split out first and every remaining segment "
      "gets the `▁` prefix, so `<|im_start|>user\\n` encodes as `[<|im_start|>, ▁us, er, <0x0A>]` (ids 3, 572, 273, 15) and "
      "`<|im_end|>\\n` as `[<|im_end|>, ▁, <0x0A>]` (4, 4017, 15); the training data was encoded this way.\n")
    w("**Verification** (`tools/train/verify_tokenizer.py`): %d strings (random corpus lines and documents, "
      "fragments, whitespace runs, tabs, newlines, control characters, emoji, CJK, accents, digits, the empty "
      "string, ChatML conversations). Expected ids from SentencePiece (`sp.encode`, for the %d strings without "
      "special tokens; split-then-encode for the rest). Official Hugging Face tokenizers (%s, Rust): `%s`. "
      "The pure-Python tokenizer in `tools/train/reference.py`: ids equal %s, decode round-trip %s.\n"
      % (vt["strings"], vt["strings_without_special_tokens"], vt["oracle"], vt["result"],
         cr["python_tokenizer_ids_equal"], cr["python_tokenizer_decode_roundtrip"]))
    w("## Chat template\n")
    w("ChatML, without a default system message; `<s>` is added by the tokenizer (`add_bos_token`):\n")
    w("```\n<|im_start|>user\nAny advice for today?<|im_end|>\n<|im_start|>assistant\n```\n")
    w("## Training\n")
    w("`tools/train/train.py`, PyTorch 1.13.1 (Debian python3-torch) on CPU, one thread, `nice -n 19` on a "
      "shared 2-vCPU machine. BF16 autocast, AdamW (betas 0.9/0.95, weight decay %.1f on matrices), peak "
      "learning rate %g, warm-up over the first %d%% of the time budget, then cosine decay to %d%% over a "
      "**wall-clock** budget of %d minutes; batch %d × %d tokens (random windows of the packed token stream), "
      "gradient clipping 1.0, seed %d.\n" % (a["weight_decay"], a["lr"], round(a["warmup_frac"] * 100), round(a["final_lr_ratio"] * 100),
                                            round(a["minutes"]), a["batch"], a["seq_len"], a["seed"]))
    w("| steps | tokens seen | epochs | wall-clock | mean throughput |\n|---|---|---|---|---|")
    w("| %d | %d | %.2f | %.1f min | %.0f tokens/s |\n" % (done["step"], done["tokens"], done["tokens"] / meta["train"]["tokens"],
                                                          done["elapsed"] / 60, done["tokens"] / done["elapsed"]))
    for e in resumes:
        w("The run was stopped after its checkpoint at step %d (%.0f s) and resumed from it with `--resume` and "
          "a %d-minute budget: the shared CPU gave it far fewer tokens per second than planned, so the "
          "budget was lengthened early (the schedule is a function of elapsed time, so the resumed run simply "
          "continued the longer cosine).\n" % (e["step"], e["elapsed"], round(e["args"]["minutes"])))
    w("The machine was shared with other processes compiling C++, so throughput varied with the CPU share "
      "this process got; the time-based schedule makes the run end on time regardless.\n")
    if evals:
        w("Validation loss during training (first %d windows of the held-out split, in-memory model, BF16 "
          "autocast):\n" % a["eval_windows"])
        w("| minutes | tokens seen | val loss |\n|---|---|---|")
        for e in evals:
            w("| %.0f | %.2f M | %.3f |" % (e["elapsed"] / 60, e["tokens"] / 1e6, e["val_loss"]))
        w("")
    w("## Evaluation\n")
    w("Computed by `tools/train/eval_val.py` from the exported `model.safetensors` (BF16 weights, float32 "
      "compute in `reference.py`) on the whole held-out split, in non-overlapping windows of %d tokens "
      "(%d tokens scored):\n" % (ev["window"], ev["val_tokens_scored"]))
    w("| validation loss (nats/token) | perplexity |\n|---|---|")
    w("| **%.4f** | **%.2f** |\n" % (ev["val_loss"], ev["val_ppl"]))
    w("(In-memory model with BF16 autocast at the end of training: loss %.4f.)\n" % done["val_loss"])
    w("`tools/train/check_reference.py`: the reference forward on the exported file and the training model "
      "loaded with the same BF16-rounded weights (both float32) differ by at most %.1e in logits on "
      "sequences of %s tokens; reference float32 vs float64: at most %.1e.\n"
      % (max(cr["max_abs_logit_diff_reference_vs_training_model"]), "/".join(map(str, cr["sequence_lengths"])),
         max(cr["max_abs_logit_diff_reference_f32_vs_f64"])))
    w("## Sample outputs\n")
    w("Produced from the files in this directory by `tools/train/reference.py` (its own safetensors reader, "
      "tokenizer and forward pass), prompt encoded with `<s>`; sampled outputs use the generation_config "
      "defaults. Chat prompts are rendered with the chat template.\n")
    for mode, p, out in samples:
        w("- *%s* — **%s** → %s" % (mode, json.dumps(p, ensure_ascii=False), json.dumps(out, ensure_ascii=False)))
    w("")
    w("`golden.json` holds, for a few prompts, the token ids with and without `<s>`, 32 greedy tokens, the "
      "top-1/top-2 logit margin at each greedy step and the last-position logits from the float64 reference, "
      "and one greedy chat reply, for engine tests. BF16 weights/compute move logits by a few hundredths, so "
      "a greedy comparison is only robust up to the first step whose margin is that small.\n")
    w("## Limitations\n")
    w("Tiny model, tiny corpus, under an hour and a half of one shared CPU core: it produces period-flavoured English "
      "that drifts, repeats under greedy decoding, and invents facts. Its data includes religious text and "
      "fortune-cookie quotations of mixed origin and taste. Use it to exercise an inference engine, not to "
      "answer questions.\n")
    w("## Reproducing\n")
    w("```\nsh tools/train/install-train-deps.sh   # Debian packages + npm tokenizers (for verification)\n"
      "sh tools/train/run_all.sh                # MINUTES=85 (as shipped) by default, plus about 5 minutes\n```\n")
    w("Training on a CPU is not bit-reproducible across machines or CPU shares (the schedule follows wall-clock "
      "time), so these exported files are the reference; the scripts record their provenance.\n")
    open(os.path.join(model_dir, "MODEL_CARD.md"), "w").write("\n".join(L))
    for mode, p, out in samples:
        print("[%s] %r -> %r" % (mode, p, out))


if __name__ == "__main__":
    main()
