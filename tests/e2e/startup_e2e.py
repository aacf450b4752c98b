#!/usr/bin/env python3
"""End-to-end: what a new user meets before the first request (issue 15).

- `strata --version`: version, commit, compiler, CPU backend.
- The binary holds no absolute path of the checkout.
- `cmake --install BUILD --prefix P` lays out P/bin/strata, the bundled model,
  the plugin header and the example plugin; a copy of P (`cp -a`), with the
  checkout's copy gone, serves `strata serve` with no MODEL argument; the
  example plugin compiles against the installed header alone.
- `strata serve ORG/NAME` finds the model in a Hugging Face cache
  (HF_HUB_CACHE, --download-dir, --revision), serves it under that name; an
  id that is not there fails at once, naming where it looked.
- `--max-model-len` above max_position_embeddings is refused with both numbers
  unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.
- vLLM's tiering blog config (no kv_connector / kv_role) starts the
  OffloadingConnector, with one log line saying so.
- Response ids are 128 random bits: two restarts with the same --seed differ.

usage: startup_e2e.py STRATA_BIN MODEL_DIR BUILD_DIR SOURCE_DIR   (stdlib only)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tiers"))
from strata_server import Checks, Server  # noqa: E402

ID_SHAPE = re.compile(r"(chat)?cmpl-[0-9a-f]{32}")


def run(cmd, env=None, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_completion(server, model_name):
    r = server.post("/v1/completions", {"model": model_name, "prompt": "Once upon a time",
                                        "max_tokens": 4, "temperature": 0})
    return r


def check_version(c, strata):
    r = run([strata, "--version"])
    line = r.stdout.strip()
    c.check(r.returncode == 0 and re.fullmatch(
        r"strata \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,}(-dirty)?|unknown), \S+ [\d.]+, "
        r"CPU backend \S+\)", line) is not None, f"strata --version: {line!r}")


def check_no_checkout_path(c, strata, source_dir):
    with open(strata, "rb") as f:
        blob = f.read()
    root = os.path.realpath(source_dir).encode()
    c.check(root not in blob, f"the binary holds no path of the checkout ({root.decode()})")


def check_install(c, strata, build_dir, tmp):
    first = os.path.join(tmp, "prefix")
    r = run(["cmake", "--install", build_dir, "--prefix", first])
    c.check(r.returncode == 0, "cmake --install: " + (r.stderr.strip() or "ok"))
    want = ["bin/strata", "share/strata/models/strata-tiny/config.json",
            "share/strata/models/strata-tiny/model.safetensors",
            "include/strata/strata_tier_plugin.h",
            "lib/strata/plugins/libstrata_memory_tier.so",
            "share/strata/examples/memory_tier/memory_tier.cc"]
    for rel in want:
        c.check(os.path.exists(os.path.join(first, rel)), f"installed {rel}")
    # Relocated: a copy elsewhere, the original removed.
    moved = os.path.join(tmp, "elsewhere", "strata")
    os.makedirs(os.path.dirname(moved))
    c.check(run(["cp", "-a", first, moved]).returncode == 0, "cp -a PREFIX elsewhere")
    shutil.rmtree(first)
    server = Server(os.path.join(moved, "bin", "strata"), None, name="relocated")
    try:
        c.check(os.path.join(moved, "share/strata/models/strata-tiny") in server.text_log(),
                "the copied prefix serves its own bundled model")
        r = one_completion(server, os.path.join(moved, "share/strata/models/strata-tiny"))
        c.check(r["usage"]["completion_tokens"] == 4, "a request to the relocated server")
        ids = [r["id"]]
    finally:
        server.stop()
    plugin = os.path.join(tmp, "libmem.so")
    r = run(["g++", "-std=c++20", "-shared", "-fPIC", "-I", os.path.join(moved, "include/strata"),
             os.path.join(moved, "share/strata/examples/memory_tier/memory_tier.cc"), "-o", plugin])
    c.check(r.returncode == 0, "the example plugin builds against the installed header alone"
            + ("" if r.returncode == 0 else ": " + r.stderr[-2000:]))
    return ids


def make_hub_cache(root, model_dir, repo, commit):
    """The layout huggingface_hub leaves: blobs, snapshot links, refs/main."""
    base = os.path.join(root, "models--" + repo.replace("/", "--"))
    snap = os.path.join(base, "snapshots", commit)
    os.makedirs(os.path.join(base, "blobs"))
    os.makedirs(snap)
    os.makedirs(os.path.join(base, "refs"))
    for i, name in enumerate(sorted(os.listdir(model_dir))):
        blob = os.path.join(base, "blobs", f"{i:040x}")
        shutil.copyfile(os.path.join(model_dir, name), blob)
        os.symlink(os.path.relpath(blob, snap), os.path.join(snap, name))
    with open(os.path.join(base, "refs", "main"), "w") as f:
        f.write(commit)
    return snap


def check_hub_cache(c, strata, model_dir, tmp):
    hub = os.path.join(tmp, "hub")
    snap = make_hub_cache(hub, model_dir, "StrataTest/tiny", "0123abcd")
    server = Server(strata, "StrataTest/tiny", env={"HF_HUB_CACHE": hub}, name="hub")
    try:
        c.check(snap in server.text_log(), "StrataTest/tiny loads from its snapshot")
        with __import__("urllib.request").request.urlopen(server.base + "/v1/models") as r:
            models = json.load(r)["data"]
        c.check(models[0]["id"] == "StrataTest/tiny", f"served as the id: {models[0]['id']}")
        r = one_completion(server, "StrataTest/tiny")
        c.check(r["usage"]["completion_tokens"] == 4, "a request to the id")
        ids = [r["id"]]
    finally:
        server.stop()
    # --download-dir is a cache root; --revision picks a ref.
    other = os.path.join(tmp, "downloads")
    make_hub_cache(other, model_dir, "StrataTest/tiny", "feed")
    with open(os.path.join(other, "models--StrataTest--tiny", "refs", "v1"), "w") as f:
        f.write("feed")
    r = run([strata, "serve", "StrataTest/tiny", "--download-dir", other, "--revision", "v2",
             "--port", "0"], env={"HF_HUB_CACHE": hub})
    c.check(r.returncode != 0 and "no ref or snapshot 'v2'" in r.stderr and other in r.stderr,
            "--download-dir with an absent --revision names it: " + r.stderr.strip()[-300:])
    missing = run([strata, "serve", "Nobody/absent-model", "--port", "0"],
                  env={"HF_HUB_CACHE": hub})
    c.check(missing.returncode != 0 and
            os.path.join(hub, "models--Nobody--absent-model") in missing.stderr and
            "does not download" in missing.stderr,
            "an absent id fails naming where it looked: " + missing.stderr.strip()[-300:])
    return ids


def check_max_model_len(c, strata, tmp):
    r = run([strata, "serve", "--max-model-len", "1024", "--port", "0"])
    c.check(r.returncode != 0 and "1024" in r.stderr and "max_position_embeddings 512" in r.stderr
            and "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in r.stderr,
            "--max-model-len past the model is refused: " + r.stderr.strip()[-300:])
    # Allowed by the env var, with a warning; the same server checks the blog config.
    blog = {"kv_connector_extra_config": {
        "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 64 << 20, "block_size": 16,
        "eviction_policy": "lru",
        "secondary_tiers": [{"type": "fs", "root_dir": os.path.join(tmp, "kv"),
                             "n_read_threads": 32, "n_write_threads": 16}]}}
    server = Server(strata, None, "--max-model-len", "1024", "--kv-transfer-config",
                    json.dumps(blog), env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}, name="long")
    try:
        log = server.text_log()
        c.check("serving it because VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in log,
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 serves it with a warning")
        c.check("using kv_connector OffloadingConnector, kv_role kv_both" in log,
                "the blog config means OffloadingConnector / kv_both, logged")
        r = one_completion(server, "")
        c.check(r["usage"]["completion_tokens"] == 4, "a request with the blog config")
        return [r["id"]]
    finally:
        server.stop()


def main():
    strata, model_dir, build_dir, source_dir = sys.argv[1:5]
    c = Checks()
    check_version(c, strata)
    check_no_checkout_path(c, strata, source_dir)
    with tempfile.TemporaryDirectory() as tmp:
        ids = check_install(c, strata, build_dir, tmp)
        ids += check_hub_cache(c, strata, model_dir, tmp)
        ids += check_max_model_len(c, strata, tmp)
    # Three restarts, all with the default --seed 0.
    c.check(all(ID_SHAPE.fullmatch(i) for i in ids), f"ids are 32 random hex digits: {ids}")
    c.check(len(set(ids)) == len(ids), "ids differ across restarts with the same --seed")
    c.finish()


if __name__ == "__main__":
    main()
