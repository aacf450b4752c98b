#!/usr/bin/python3
"""Golden test: Strata's forward pass vs the independent PyTorch reference.

  run_golden.py --case NAME --strata BIN --work DIR      one case (what ctest runs)
  run_golden.py --self-test --work DIR                   proves the check passes on the
                                                         reference itself and FAILS on wrong
                                                         logits (perturbed / injected bugs)
  run_golden.py --survey --work DIR [--case NAME]        margins and emulated-rounding
                                                         errors per case (for README.md)
  run_golden.py --llamacpp-vs-ref --work DIR [--case N]  llama.cpp's logits on each quantized
                                                         GGUF vs the reference (no Strata)
  run_golden.py --vs-llamacpp --strata BIN --work DIR    Strata vs llama.cpp on the same
                                                         quantized GGUF (no reference)
  run_golden.py --list [--types]

Per case: build (or reuse) the checkpoint (cached under DIR keyed by a hash of the
generator scripts and case), compute the reference greedy continuation (64-token prompt,
32 tokens, float64, full recompute), run
  strata generate --model M --prompt-ids ... --max-tokens 32 --temperature 0 --json
                  --dump-logits F
and check: (1) every logits row, rows predicting tokens 1..end of prompt+output, within
max|strata - ref| <= tol * max|ref| (reference recomputed on Strata's own sequence);
(2) Strata's 32 tokens equal the reference's (see README.md for the near-tie rule);
(3) top_logprobs consistent with the logits.

Quantized cases ("quant": a llama-quantize type such as Q4_K_M) convert the checkpoint to an
f32 GGUF with llama.cpp's converter, then `llama_run quantize` it (llama_model_quantize, the
code of llama-quantize); the reference reads that quantized file (gguf_io dequantizes it
exactly), and the file's set of tensor types must equal the case's "types".
"""
import argparse
import hashlib
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REF_DIR = os.path.join(ROOT, "tools", "reference")
LLAMACPP_DIR = os.path.join(ROOT, "tools", "llamacpp")
sys.path.insert(0, REF_DIR)

PROMPT_TOKENS = 64
MAX_TOKENS = 32


def load_cases():
    with open(os.path.join(HERE, "cases.json")) as f:
        spec = json.load(f)
    cases = {}
    for name, c in spec["cases"].items():
        c = dict(c)
        c.setdefault("shards", 1)
        c.setdefault("gguf", None)
        c.setdefault("kv", "f32")
        c.setdefault("shape", "tiny")
        c.setdefault("quant", None)
        c.setdefault("types", None)
        seed_key = c["arch"] if c["shape"] == "tiny" else f"{c['arch']}-{c['shape']}"
        c["seed"] = spec["seeds"][seed_key]
        if c["quant"]:
            assert c["gguf"] == "f32" and c["types"], f"{name}: quant cases need gguf f32 + types"
            c["tol"] = spec["quant_tolerances"][c["quant"]]
            c["tol_vs_llamacpp"] = spec["vs_llamacpp_tolerances"][c["quant"]]
        else:
            c["tol"] = spec["tolerances"][c["gguf"] if c["gguf"] == "q8_0" else c["dtype"]]
            if c["gguf"] == "q8_0":
                c["tol_vs_llamacpp"] = spec["vs_llamacpp_tolerances"]["Q8_0"]
        if c["kv"] != "f32":  # the KV cache's rounding, taken the same way by the reference
            c["tol"] = max(c["tol"], spec["kv_tolerances"][c["kv"]])
        # f32 GGUF is checked against the safetensors original; q8_0 and quantized files
        # against their own weights.
        c["ref_source"] = "gguf" if c["gguf"] == "q8_0" or c["quant"] else "hf"
        cases[name] = c
    return cases


def file_hash(paths):
    h = hashlib.sha256()
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in sorted(os.walk(p)):
                for f in sorted(files):
                    if f.endswith(".py"):
                        h.update(open(os.path.join(root, f), "rb").read())
        else:
            h.update(open(p, "rb").read())
    return h.hexdigest()


def model_key(case):
    files = [os.path.join(REF_DIR, "make_checkpoint.py"), os.path.join(REF_DIR, "st_io.py")]
    if case["gguf"]:
        files += [os.path.join(LLAMACPP_DIR, f) for f in
                  ("convert_driver.py", "convert.sh", "env.sh", "package-lock.json", "shims")]
    if case["quant"]:
        files.append(os.path.join(LLAMACPP_DIR, "llama_run.c"))
    h = hashlib.sha256(file_hash(files).encode())
    keys = ("arch", "dtype", "seed", "shards", "gguf")
    keys += tuple(k for k in ("shape", "quant") if case[k] not in ("tiny", None))
    h.update(json.dumps({k: case[k] for k in keys}, sort_keys=True).encode())
    return h.hexdigest()[:16]


def atomic_write(path, data):
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"command failed ({r.returncode}): {' '.join(cmd)}\n"
                           f"stdout:\n{r.stdout[-4000:]}\nstderr:\n{r.stderr[-4000:]}")
    return r.stdout


def build_once(d, build):
    """Runs build(tmp) in a private directory renamed to d, unless d is complete already, so
    concurrent ctest jobs never see a half-written model."""
    if os.path.exists(os.path.join(d, ".done")):
        return
    os.makedirs(os.path.dirname(d), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(d), prefix=f".{os.path.basename(d)}-")
    build(tmp)
    open(os.path.join(tmp, ".done"), "w").close()
    try:
        os.rename(tmp, d)
    except OSError:  # another job finished first
        shutil.rmtree(tmp, ignore_errors=True)


def gguf_path(d, case):
    return os.path.join(d, f"model-{case['quant'] or case['gguf']}.gguf")


def ensure_model(name, case, work):
    """Returns (path given to strata, path the reference reads)."""
    if case["quant"]:
        # The f32 conversion is shared by every quant case of one arch/shape/seed.
        base = dict(case, quant=None)
        base_dir = os.path.join(work, "models",
                                f"base-{case['arch']}-{case['shape']}-{model_key(base)}")
        build_once(base_dir, lambda tmp: build_checkpoint(base, tmp))
        d = os.path.join(work, "models", f"{name}-{model_key(case)}")

        def quantize(tmp):
            out = gguf_path(tmp, case)
            run([os.path.join(LLAMACPP_DIR, "llama_run.sh"), "quantize",
                 gguf_path(base_dir, base), out, case["quant"], "1"])
            from gguf_io import read_gguf
            types = read_gguf(out, load_tensors=False)[2]
            atomic_write(os.path.join(tmp, "types.json"),
                         json.dumps(types, indent=1, sort_keys=True).encode())

        build_once(d, quantize)
        return gguf_path(d, case), gguf_path(d, case)
    d = os.path.join(work, "models", f"{name}-{model_key(case)}")
    build_once(d, lambda tmp: build_checkpoint(case, tmp))
    hf = os.path.join(d, "hf")
    gguf = gguf_path(d, case)
    target = gguf if case["gguf"] else hf
    return target, (gguf if case["ref_source"] == "gguf" else hf)


def build_checkpoint(case, tmp):
    run([sys.executable, os.path.join(REF_DIR, "make_checkpoint.py"), "--arch", case["arch"],
         "--dtype", case["dtype"], "--seed", str(case["seed"]), "--shards",
         str(case["shards"]), "--shape", case["shape"], "--out", os.path.join(tmp, "hf")])
    if case["gguf"]:
        run([os.path.join(LLAMACPP_DIR, "convert.sh"), os.path.join(tmp, "hf"),
             gguf_path(tmp, case), case["gguf"]],
            env=dict(os.environ, STRATA_REF_PYTHON=sys.executable))


def file_types(gguf):
    """{tensor name: ggml type name} of a quantized case's GGUF (recorded at quantization)."""
    with open(os.path.join(os.path.dirname(gguf), "types.json")) as f:
        return json.load(f)


def types_summary(types):
    """'Q6_K: output, attn_v[1], ffn_down[1]; ...' (layer indices in brackets)."""
    by_type = {}
    for tname, ttype in types.items():
        parts = tname.removesuffix(".weight").split(".")
        role, layer = ((".".join(parts[2:]), parts[1]) if parts[0] == "blk"
                       else (".".join(parts), None))
        by_type.setdefault(ttype, {}).setdefault(role, []).append(layer)
    out = []
    for ttype in sorted(by_type):
        roles = [r if None in ls else f"{r}[{','.join(sorted(ls, key=int))}]"
                 for r, ls in sorted(by_type[ttype].items())]
        out.append(f"{ttype}: {', '.join(roles)}")
    return "; ".join(out)


def check_types(case, gguf):
    """Problems (list of str) if the file's set of tensor types is not the case's "types"."""
    got = sorted(set(file_types(gguf).values()))
    want = sorted(case["types"])
    if got != want:
        return [f"FAIL the quantized file has types {got}, the case expects {want}: llama.cpp's "
                f"type mix changed or the shape no longer triggers it ({types_summary(file_types(gguf))})"]
    return []


def prompt_for(case, vocab):
    from make_checkpoint import NORMAL_HI_PAD, NORMAL_LO
    rng = random.Random(case["seed"] * 31 + 5)
    return [rng.randrange(NORMAL_LO, vocab - NORMAL_HI_PAD) for _ in range(PROMPT_TOKENS)]


class Reference:
    """The reference model of one case, with its greedy path cached on disk."""

    def __init__(self, path, work, case):
        import torch
        import reference as R
        torch.set_num_threads(1)
        self.R, self.torch = R, torch
        self.m = R.load_model(path).to(torch.float64)
        self.kv = case["kv"]
        self.prompt = prompt_for(case, self.m.vocab)
        key = hashlib.sha256((file_hash([REF_DIR]) + path + json.dumps(self.prompt) +
                              ("" if self.kv == "f32" else ";kv=" + self.kv)).encode())
        cache = os.path.join(os.path.dirname(os.path.normpath(path)), f"ref-{key.hexdigest()[:16]}")
        os.makedirs(cache, exist_ok=True)
        out_path = os.path.join(cache, "ref.json")
        if os.path.exists(out_path):
            with open(out_path) as f:
                self.out = json.load(f)["output_ids"]
        else:
            self.out = R.greedy(self.m, self.prompt, MAX_TOKENS, kv=self.kv)
            atomic_write(out_path, json.dumps({"prompt_ids": self.prompt,
                                               "output_ids": self.out}).encode())
        self.logits_cache = os.path.join(cache, "ref-logits.bin")
        self.allowance_cache = os.path.join(cache, f"kv-boundary-{R.KV_BOUNDARY_REL:g}.json")

    def logits(self, seq):
        """float64 numpy logits for rows 0..len(seq)-2 (cached for the reference's own seq)."""
        if seq == self.prompt + self.out and os.path.exists(self.logits_cache):
            import numpy as np
            return self.R.read_logits(self.logits_cache).astype(np.float64)
        lg = self.R.forward(self.m, seq[:-1], kv=self.kv)
        if seq == self.prompt + self.out:
            tmp = f"{self.logits_cache}.{os.getpid()}"
            self.R.write_logits(tmp, lg)
            os.replace(tmp, self.logits_cache)
            return self.R.read_logits(self.logits_cache).astype("float64")
        return lg.numpy()

    def boundary_allowance(self, seq):
        """float64 numpy [len(seq) - 1], relative to each row's max|logit|: what fp8 K/V
        elements within reference.KV_BOUNDARY_REL (of their row's max) of a rounding boundary
        may move that row (0 for other KV dtypes; README.md, "Compact KV cache"), and
        their number. Cached for the reference's own seq."""
        import numpy as np
        if not self.kv.startswith("fp8"):  # bf16 / f16: see README.md for why not
            return np.zeros(len(seq) - 1), 0
        own = seq == self.prompt + self.out
        if own and os.path.exists(self.allowance_cache):
            with open(self.allowance_cache) as f:
                cached = json.load(f)
            return np.array(cached["allowance"]), cached["elements"]
        allowance, n = self.R.kv_boundary_allowance(self.m, seq[:-1], self.kv,
                                                    self.R.KV_BOUNDARY_REL)
        allowance = allowance / np.abs(self.logits(seq)).max(1)
        if own:
            atomic_write(self.allowance_cache, json.dumps(
                {"allowance": allowance.tolist(), "elements": n}).encode())
        return allowance, n

    def margins(self):
        """Relative top-1/top-2 margin at each greedy step, ((top1-top2)/max|logit|)."""
        import numpy as np
        lg = self.logits(self.prompt + self.out)[PROMPT_TOKENS - 1:]
        srt = np.sort(lg, axis=1)
        return (srt[:, -1] - srt[:, -2]) / np.abs(lg).max(1)


def compare(name, case, ref, strata_json, strata_logits):
    """Returns (ok, report lines)."""
    import numpy as np
    tol = case["tol"]
    lines, ok = [], True
    prompt = ref.prompt
    s_out = list(strata_json.get("output_ids", []))
    if list(strata_json.get("prompt_ids", [])) != prompt:
        return False, ["prompt_ids in strata's JSON differ from the prompt given"]
    if len(s_out) != MAX_TOKENS:
        lines.append(f"FAIL strata produced {len(s_out)} tokens, expected {MAX_TOKENS}")
        ok = False
    seq = prompt + s_out
    want_rows = len(seq) - 1
    if strata_logits.shape != (want_rows, ref.m.vocab):
        return False, lines + [f"FAIL logits file is {strata_logits.shape[0]}x"
                               f"{strata_logits.shape[1]}, expected {want_rows}x{ref.m.vocab}"]
    rl = ref.logits(seq)
    sl = strata_logits.astype(np.float64)
    if not np.isfinite(sl).all():
        bad = np.argwhere(~np.isfinite(sl))[0]
        return False, lines + [f"FAIL non-finite logit at row {bad[0]} token {bad[1]}"]
    scale = np.abs(rl).max(1)
    err = np.abs(sl - rl).max(1)
    rel = err / scale
    # Per row: tol, plus what K/V elements on a rounding boundary may move it (compact KV).
    allowance, n_boundary = ref.boundary_allowance(seq)
    bound = tol + allowance
    worst = int((rel / bound).argmax())
    n_bad = int((rel > bound).sum())
    region = lambda r: "prompt" if r < PROMPT_TOKENS - 1 else "decode"  # noqa: E731
    lines.append(f"logits: {want_rows} rows, worst row {worst} ({region(worst)}) "
                 f"rel err {rel[worst]:.3e} (abs {err[worst]:.3e}, max|ref| {scale[worst]:.2f}),"
                 f" tol {tol:.1e}; prompt rows max {rel[:PROMPT_TOKENS - 1].max():.3e}, "
                 f"decode rows max {rel[PROMPT_TOKENS - 1:].max() if want_rows >= PROMPT_TOKENS else 0:.3e}")
    if n_boundary:
        lines.append(f"kv: {n_boundary} K/V elements within {ref.R.KV_BOUNDARY_REL:g} of a "
                     f"rounding boundary: a row's bound is tol + their effect on it, up to "
                     f"{bound.max():.3e} (row {int(bound.argmax())}); nearest its bound: row "
                     f"{worst}, {rel[worst]:.3e} of {bound[worst]:.3e}")
    if n_bad:
        ok = False
        bad_rows = np.nonzero(rel > bound)[0]
        lines.append(f"FAIL {n_bad} rows exceed their bound; first {bad_rows[:8].tolist()}")
        for r in bad_rows[:3]:
            t = int(np.abs(sl[r] - rl[r]).argmax())
            lines.append(f"  row {r} ({region(r)}, predicts token {r + 1}): worst token {t}: "
                         f"strata {sl[r, t]:.6f} ref {rl[r, t]:.6f}; argmax strata "
                         f"{int(sl[r].argmax())} ref {int(rl[r].argmax())}")
    # Greedy path.
    margins = ref.margins()
    diverge = next((i for i, (a, b) in enumerate(zip(s_out, ref.out)) if a != b), None)
    lines.append(f"greedy: strata {s_out[:8]}... ref {ref.out[:8]}...; min ref margin "
                 f"{margins.min():.3e} (2*tol = {2 * tol:.1e})")
    if diverge is not None:
        i = diverge
        row = rl[PROMPT_TOKENS - 1 + i]
        row_bound = bound[PROMPT_TOKENS - 1 + i]
        top = row.max()
        near = (top - row[s_out[i]]) <= 2 * row_bound * np.abs(row).max()
        msg = (f"step {i}: strata {s_out[i]} ref {ref.out[i]}, ref margin {margins[i]:.3e}, "
               f"ref logit gap of strata's token {(top - row[s_out[i]]) / np.abs(row).max():.3e}")
        if margins[i] >= 2 * row_bound or not near:
            ok = False
            lines.append("FAIL greedy output differs at " + msg)
        else:
            lines.append("NOTE near-tie divergence accepted at " + msg)
    # top_logprobs.
    tlp = strata_json.get("top_logprobs")
    if not isinstance(tlp, list) or len(tlp) != len(s_out):
        ok = False
        lines.append(f"FAIL top_logprobs has {len(tlp) if isinstance(tlp, list) else tlp!r} "
                     f"entries, expected {len(s_out)}")
    else:
        worst_lp, lp_ok = 0.0, True
        for i, entry in enumerate(tlp):
            row = rl[PROMPT_TOKENS - 1 + i]
            limit = 2 * bound[PROMPT_TOKENS - 1 + i] + 1e-6
            lse = row.max() + np.log(np.exp(row - row.max()).sum())
            if len(entry) != 5 or int(entry[0][0]) != s_out[i]:
                ok = False
                lines.append(f"FAIL top_logprobs[{i}] = {entry} (want 5 entries, first = "
                             f"output token {s_out[i]})")
                break
            for tok, lp in entry:
                dev = abs(lp - (row[int(tok)] - lse)) / np.abs(row).max()
                worst_lp = max(worst_lp, dev)
                lp_ok &= dev <= limit
        if not lp_ok:
            ok = False
            lines.append(f"FAIL top_logprobs deviate from the reference by {worst_lp:.3e} "
                         f"(relative to max|logit|; bound 2*tol, plus twice the row's KV "
                         f"boundary allowance)")
    return ok, lines


# A case's "kv" -> strata's --kv-cache-dtype value.
KV_FLAG = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "fp8_e4m3": "fp8_e4m3",
           "fp8_e5m2": "fp8_e5m2"}


def run_strata(strata_cmd, model, prompt, tmp, kv="f32"):
    logits_path = os.path.join(tmp, "strata-logits.bin")
    cmd = shlex.split(strata_cmd) + [
        "generate", "--model", model, "--prompt-ids", ",".join(map(str, prompt)),
        "--max-tokens", str(MAX_TOKENS), "--temperature", "0", "--json",
        "--dump-logits", logits_path, "--kv-cache-dtype", KV_FLAG[kv]]
    out = run(cmd)
    try:
        js = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        raise RuntimeError(f"strata did not print a JSON object on stdout: {out[-2000:]!r}") from e
    import reference as R
    return js, R.read_logits(logits_path)


def case_label(case):
    return (f"{case['arch']} {case['dtype']}"
            f"{' kv ' + case['kv'] if case['kv'] != 'f32' else ''}"
            f"{' shape ' + case['shape'] if case['shape'] != 'tiny' else ''}"
            f"{' gguf ' + case['gguf'] if case['gguf'] else ''}"
            f"{' quantized ' + case['quant'] if case['quant'] else ''}"
            f"{' shards ' + str(case['shards']) if case['shards'] > 1 else ''}")


def run_case(name, case, strata_cmd, work, perturb=None, quiet=False):
    model, ref_path = ensure_model(name, case, work)
    if case["quant"]:
        problems = check_types(case, model)
        if problems:
            print(f"[{name}] FAIL ({case_label(case)}; model {model})\n  " + problems[0])
            return False
    ref = Reference(ref_path, work, case)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        js, lg = run_strata(strata_cmd, model, ref.prompt, tmp, case["kv"])
    if perturb == "logit":  # self-test: one wrong logit
        lg = lg.copy()
        r = lg.shape[0] - 3
        lg[r, 7] += 3 * case["tol"] * abs(lg[r]).max()
    elif perturb == "token":  # self-test: one wrong greedy token, logits left as they were
        js["output_ids"][5] = (js["output_ids"][5] + 1) % lg.shape[1]
    ok, lines = compare(name, case, ref, js, lg)
    if not quiet or not ok:
        print(f"[{name}] {'PASS' if ok else 'FAIL'} ({case_label(case)}; model {model})")
        if case["quant"]:
            print(f"  tensor types: {types_summary(file_types(model))}")
        for line in lines:
            print("  " + line)
    return ok


def reference_as_strata(bug="none", model_override=None):
    return f"{shlex.quote(sys.executable)} {shlex.quote(os.path.join(HERE, 'ref_as_strata.py'))}" \
        f" --inject-bug {bug}" + \
        (f" --model-override {shlex.quote(model_override)}" if model_override else "")


def self_test(cases, work):
    """The golden check must pass on exact logits and fail on wrong ones."""
    checks = [
        ("llama-f32", "none", None, True, "reference vs itself"),
        ("qwen3-gguf-q8_0", "none", None, True, "reference vs itself (q8_0 GGUF)"),
        ("llama-f32", "none", "logit", False, "one logit perturbed by 3*tol*max"),
        ("qwen3-bf16", "none", "token", False, "greedy token 5 replaced"),
        ("mistral-f32", "no-sliding-window", None, False, "sliding window ignored"),
        ("qwen2-f32", "bf16-act", None, False, "bf16 activation rounding vs f32 tol"),
        ("llama-bf16", "bf16-act", None, True, "bf16 activation rounding vs bf16 tol"),
        ("qwen2-gguf-q8_0", "q8_0-act", None, True, "q8_0 activation quantization vs q8_0 tol"),
        ("llama-f32-kv-bf16", "none", None, True, "reference vs itself (bf16 KV)"),
        ("llama-f32-kv-bf16", "kv-f32", None, False, "bf16 KV rounding left out"),
        ("qwen3-f32-kv-fp8", "kv-f32", None, False, "fp8 KV rounding left out"),
        ("qwen3-f32-kv-fp8", "kv-boundary-flip", None, True, "e4m3 boundary K/V flipped"),
        ("mistral-f32-kv-fp8_e5m2", "kv-boundary-flip", None, True, "e5m2 boundary K/V flipped"),
        ("llama-k256-q4_k_m", "none", None, True, "reference vs itself (Q4_K_M GGUF)"),
        ("llama-k256-iq4_xs", "llamacpp-act", None, True, "llama.cpp's Q8_K act. quant vs tol"),
        ("llama-k256-q4_0", "llamacpp-act", None, True, "llama.cpp's Q8_0 act. quant vs tol"),
        ("qwen2-k320-q4_k_m", "bf16-wa", None, True, "bf16 weights + activations vs tol"),
        ("llama-k256-q4_k_m", "unquantized", None, False, "f32 original instead of Q4_K_M"),
        ("llama-k256-q2_k", "unquantized", None, False, "f32 original instead of Q2_K"),
        ("llama-k256-q4_k_m", "wrong-types", None, False, "file lacks the expected types"),
    ]
    all_ok = True
    for name, bug, perturb, want, what in checks:
        case = cases[name]
        override = None
        if bug == "unquantized":  # the stand-in reads the f32 GGUF the file was made from
            ensure_model(name, case, work)
            bug, override = "none", base_gguf(case, work)
        elif bug == "wrong-types":  # as if llama.cpp had fallen back on every tensor
            bug, case = "none", dict(case, types=["F32", "Q5_0", "Q8_0"])
        got = run_case(name, case, reference_as_strata(bug, override), work, perturb, quiet=want)
        status = "ok" if got == want else "UNEXPECTED"
        print(f"self-test {name:18s} {what:45s} -> {'pass' if got else 'fail'} "
              f"(expected {'pass' if want else 'fail'}) {status}")
        all_ok &= got == want
    return all_ok


def base_gguf(case, work):
    """The unquantized f32 GGUF a quant case was made from."""
    base = dict(case, quant=None)
    return gguf_path(os.path.join(work, "models", f"base-{case['arch']}-{case['shape']}-"
                                  f"{model_key(base)}"), base)


def survey(cases, names, work):
    """Per case: greedy margins, the error of each emulated engine rounding, and for GGUF
    files read by the reference, llama.cpp's own error and the error of ignoring the
    quantization (the f32 original's logits vs the quantized file's)."""
    import numpy as np
    rel = lambda a, b: float((np.abs(a - b).max(1) / np.abs(b).max(1)).max())  # noqa: E731
    for name in names:
        case = cases[name]
        _, ref_path = ensure_model(name, case, work)
        ref = Reference(ref_path, work, case)
        seq = ref.prompt + ref.out
        rl = ref.logits(seq)
        errs = {}
        emus = ["bf16-act", "q8_0-act"] + (["bf16-wa", "llamacpp-act"] if case["quant"] else [])
        for emu in emus:
            errs[emu] = rel(ref.R.forward(ref.m, seq[:-1], emu).numpy(), rl)
        if case["ref_source"] == "gguf":
            with tempfile.TemporaryDirectory(dir=work) as tmp:
                errs["llama.cpp"] = rel(llamacpp_logits(ref_path, seq, tmp), rl)
        if case["quant"]:
            import torch
            orig = ref.R.load_model(base_gguf(case, work)).to(torch.float64)
            errs["unquantized"] = rel(ref.R.forward(orig, seq[:-1]).numpy(), rl)
        mg = ref.margins()
        print(f"{name:18s} tol {case['tol']:.0e} min-margin {mg.min():.3f} "
              f"(needs >= {2 * case['tol']:.0e}) "
              + " ".join(f"{k} err {v:.2e}" for k, v in errs.items())
              + f" unique-out {len(set(ref.out))}", flush=True)
        if case["quant"]:
            print(f"  types: {types_summary(file_types(ref_path))}", flush=True)


def llamacpp_logits(gguf, seq, tmp):
    """llama.cpp's logits (F32 KV cache, one batch) for rows 0..len(seq)-2."""
    import reference as R
    out = os.path.join(tmp, "llamacpp-logits.bin")
    run([os.path.join(LLAMACPP_DIR, "llama_run.sh"), "logits", gguf, out,
         ",".join(map(str, seq))])
    return R.read_logits(out).astype("float64")


def compare_logits(test, base, tol, base_name, test_name):
    """Row-wise max|test - base| <= tol * max|base|, and equal argmax on every row where base's
    top-1/top-2 margin is at least 2 * tol * max|base|. Returns (ok, report lines)."""
    import numpy as np
    if test.shape != base.shape:
        return False, [f"FAIL {test_name} logits {test.shape} vs {base_name} {base.shape}"]
    if not np.isfinite(test).all():
        return False, [f"FAIL non-finite {test_name} logits"]
    scale = np.abs(base).max(1)
    rel = np.abs(test - base).max(1) / scale
    srt = np.sort(base, axis=1)
    margin = (srt[:, -1] - srt[:, -2]) / scale
    clear = margin >= 2 * tol
    disagree = np.nonzero(clear & (test.argmax(1) != base.argmax(1)))[0]
    worst = int(rel.argmax())
    ok = rel.max() <= tol and disagree.size == 0
    lines = [f"{test_name} vs {base_name}: {len(rel)} rows, worst row {worst} rel err "
             f"{rel[worst]:.3e} (tol {tol:.1e}); argmax equal on {int(clear.sum())} clear rows "
             f"(margin >= 2*tol){'' if disagree.size == 0 else ': FAIL at ' + str(disagree[:8].tolist())}"
             f"; {int((~clear).sum())} unclear rows not compared"]
    if rel.max() > tol:
        lines.append(f"FAIL {int((rel > tol).sum())} rows exceed tol; first "
                     f"{np.nonzero(rel > tol)[0][:8].tolist()}")
    return ok, lines


def quantized_cases(cases, names):
    return [n for n in names if cases[n]["ref_source"] == "gguf"]


def llamacpp_vs_ref(cases, names, work):
    """llama.cpp's logits on each quantized GGUF vs the reference reading the same file, on the
    reference's greedy sequence, within the case's tol (the bound Strata is held to): checks
    the reference's quantized-GGUF reading and the tolerances without Strata."""
    all_ok = True
    for name in quantized_cases(cases, names):
        case = cases[name]
        model, ref_path = ensure_model(name, case, work)
        problems = check_types(case, model) if case["quant"] else []
        ref = Reference(ref_path, work, case)
        seq = ref.prompt + ref.out
        with tempfile.TemporaryDirectory(dir=work) as tmp:
            ll = llamacpp_logits(model, seq, tmp)
        ok, lines = compare_logits(ll, ref.logits(seq), case["tol"], "reference", "llama.cpp")
        ok &= not problems
        print(f"[{name}] {'PASS' if ok else 'FAIL'} ({case_label(case)})")
        if case["quant"]:
            print(f"  tensor types: {types_summary(file_types(model))}")
        for line in problems + lines:
            print("  " + line)
        all_ok &= ok
    return all_ok


def vs_llamacpp(cases, names, strata_cmd, work):
    """Strata vs llama.cpp on the identical quantized GGUF: Strata generates (greedy, 32
    tokens, logits dumped); llama.cpp scores Strata's own sequence in one batch; rows compared
    with compare_logits at the case's tol_vs_llamacpp (README.md)."""
    all_ok = True
    for name in quantized_cases(cases, names):
        case = cases[name]
        model, _ = ensure_model(name, case, work)
        problems = check_types(case, model) if case["quant"] else []
        from gguf_io import tensor_shapes
        prompt = prompt_for(case, tensor_shapes(model)["token_embd.weight"][0])
        with tempfile.TemporaryDirectory(dir=work) as tmp:
            js, sl = run_strata(strata_cmd, model, prompt, tmp, case["kv"])
            seq = prompt + list(js.get("output_ids", []))
            ll = llamacpp_logits(model, seq, tmp)
        ok, lines = compare_logits(sl.astype("float64"), ll, case["tol_vs_llamacpp"],
                                   "llama.cpp", "strata")
        ok &= not problems
        print(f"[{name}] {'PASS' if ok else 'FAIL'} ({case_label(case)}; model {model})")
        for line in problems + lines:
            print("  " + line)
        all_ok &= ok
    return all_ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append")
    ap.add_argument("--strata", help="strata binary (or command prefix)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "strata-golden"))
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--survey", action="store_true")
    ap.add_argument("--llamacpp-vs-ref", action="store_true")
    ap.add_argument("--vs-llamacpp", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--types", action="store_true", help="with --list: each quant case's types")
    a = ap.parse_args()
    cases = load_cases()
    if a.list and a.types:
        for n in a.case or [n for n in cases if cases[n]["quant"]]:
            model, _ = ensure_model(n, cases[n], a.work)
            print(f"{n}: {types_summary(file_types(model))}")
        return 0
    if a.list:
        print("\n".join(cases))
        return 0
    os.makedirs(a.work, exist_ok=True)
    names = a.case or list(cases)
    for n in names:
        if n not in cases:
            ap.error(f"unknown case {n}; known: {', '.join(cases)}")
    if a.self_test:
        return 0 if self_test(cases, a.work) else 1
    if a.survey:
        survey(cases, names, a.work)
        return 0
    if a.llamacpp_vs_ref:
        return 0 if llamacpp_vs_ref(cases, names, a.work) else 1
    if not a.strata:
        ap.error("--strata is required")
    if a.vs_llamacpp:
        return 0 if vs_llamacpp(cases, names, a.strata, a.work) else 1
    ok = True
    for n in names:
        ok &= run_case(n, cases[n], a.strata, a.work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
