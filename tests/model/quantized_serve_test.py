"""`strata serve` on a GGUF that llama.cpp quantized (Q4_K_M: Q4_K and Q6_K tensors) answers
what `strata generate` computes offline on the same file: at every one of 12 greedy steps the
top logprobs equal the offline run's (the runner-up's logprob, around -70 here, depends on
the exact context, so equal values mean the same tokens so far), for several prompts, two at a time (batched
decode on quantized weights). Text is not compared: this random tokenizer's tokens are
arbitrary bytes, and how many U+FFFD an invalid UTF-8 run becomes differs between
incremental (served) and whole-sequence (offline) decoding.

  quantized_serve_test.py STRATA MODEL.gguf
"""
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tiers"))
from strata_server import Checks, Server  # noqa: E402

MAX_TOKENS = 12
# Exact mode: quantized weights keep the int8 decode numerics whatever else shares a step
# (with oneDNN, a step that also prefills more than 16 tokens runs bf16 tiles for every row).
EXACT = {**os.environ, "STRATA_NO_ONEDNN": "1"}


def offline(strata, model, ids):
    out = subprocess.run(
        [strata, "generate", "--model", model, "--prompt-ids", ",".join(map(str, ids)),
         "--max-tokens", str(MAX_TOKENS), "--temperature", "0", "--json"],
        check=True, capture_output=True, text=True, env=EXACT).stdout
    j = json.loads(out)
    # Per position: the greedy token's logprob and the runner-up's (a value that depends on
    # the exact context, unlike the top-1 logprob, which is ~0 for this peaked model).
    return j["output_ids"], [[lp for _, lp in top[:3]] for top in j["top_logprobs"]]


def main():
    strata, model = sys.argv[1], sys.argv[2]
    prompts = [[5 + (i * 37 + j * 11) % 500 for j in range(6 + 9 * i)] for i in range(4)]
    want = [offline(strata, model, p) for p in prompts]
    c = Checks()
    srv = Server(strata, model, "--max-num-seqs", "2", name="quantized", env=EXACT)
    try:
        results = [None] * len(prompts)

        def ask(i):
            results[i] = srv.post("/v1/completions", {
                "prompt": prompts[i], "max_tokens": MAX_TOKENS, "temperature": 0,
                "logprobs": 2, "ignore_eos": True})

        for first in range(0, len(prompts), 2):  # two requests in flight at a time
            threads = [threading.Thread(target=ask, args=(i,)) for i in (first, first + 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        for i, r in enumerate(results):
            choice = r["choices"][0]
            got = choice["logprobs"]["token_logprobs"]
            c.check(r["usage"]["completion_tokens"] == MAX_TOKENS and len(got) == MAX_TOKENS
                    and choice["finish_reason"] == "length",
                    f"prompt {i}: {MAX_TOKENS} tokens, finish_reason length")
            # OpenAI's completions format keys top_logprobs by token text, so tokens that decode
            # alike (often here) collapse into one entry, and the sampled token is listed besides
            # the top 2: the served runner-up must be one of the offline top 3.
            served = [sorted(pos.values(), reverse=True) for pos in choice["logprobs"]["top_logprobs"]]
            pairs = [(g, s, w) for g, s, w in zip(got, served, want[i][1]) if len(s) >= 2]
            worst = max((max(abs(g - w[0]), min(abs(s[1] - x) for x in w[1:]))
                         for g, s, w in pairs), default=1.0)
            c.check(len(pairs) * 2 >= MAX_TOKENS and worst < 1e-2,
                    f"prompt {i}: top logprobs match offline at {len(pairs)} of {MAX_TOKENS} "
                    f"steps (max diff {worst:.2e})")
    finally:
        srv.stop()
    c.finish()


if __name__ == "__main__":
    main()
