#!/usr/bin/env python3
"""End-to-end check of the tiered KV cache through `strata serve`.

1. Server A (host + filesystem tier in a fresh directory) answers a long
   prompt; its chunks reach the directory.
2. A is stopped; server B starts on the same directory (a restart: empty KV
   pool and host tier) and answers the same prompt with the prefix loaded from
   disk: same text, usage.cached_tokens and /metrics say the tokens came from
   the fs tier.
3. Every chunk file is corrupted; server C recomputes (same text, failures
   counted, no error to the client, server still healthy).
4. A server without tiers gives the same text (the recompute reference).
5. Bad --kv-transfer-config values stop startup with a message naming the key.
With STRATA_E2E_KV_DTYPE set (a --kv-cache-dtype value), every server runs with that KV
dtype and the chunk files must have its size (header + compact rows, never widened).
Usage: tiered_kv_e2e.py STRATA_BIN MODEL_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from strata_server import Checks, Server, wait_for

STRATA, MODEL = sys.argv[1], sys.argv[2]
WORDS = ("the whale ship sea captain said it was a truth universally acknowledged that a "
         "single man in possession of a good fortune must be in want of a wife and the "
         "lord spoke unto the people of the land").split()
PROMPT = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(300))
KV_DTYPE = os.environ.get("STRATA_E2E_KV_DTYPE")  # None: the server's default (auto)
KV_FLAGS = ["--kv-cache-dtype", KV_DTYPE] if KV_DTYPE else []


def chunk_file_bytes(dtype):
    """Header + payload of one chunk (one 16-token block) of the bundled model in `dtype`."""
    cfg = json.load(open(os.path.join(MODEL, "config.json")))
    heads, dim, layers = cfg["num_key_value_heads"], cfg["head_dim"], cfg["num_hidden_layers"]
    dtype = dtype or {"bfloat16": "bfloat16", "float32": "float32"}[cfg["torch_dtype"]]
    row = {"float32": heads * dim * 4, "bfloat16": heads * dim * 2, "float16": heads * dim * 2,
           "fp8": heads * (dim + 4), "fp8_e4m3": heads * (dim + 4),
           "fp8_e5m2": heads * (dim + 4)}[dtype]
    return 96 + layers * 2 * 16 * row


class TieredServer(Server):
    def __init__(self, *extra):
        super().__init__(STRATA, MODEL, "--kv-cache-memory", "8MiB", *KV_FLAGS, *extra)

    def complete(self):
        return self.post("/v1/completions", {"model": MODEL, "prompt": PROMPT, "max_tokens": 24,
                                             "temperature": 0, "ignore_eos": True})


def tier_config(root):
    return json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {
                           "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 64 << 20,
                           "eviction_policy": "lru",
                           "secondary_tiers": [{"type": "fs", "root_dir": root,
                                                "n_read_threads": 2, "n_write_threads": 2}]}})


def chunk_files(root):
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".kv")]


def main():
    root = tempfile.mkdtemp(prefix="strata-tiers-e2e-")
    checks = Checks()
    check = checks.check

    try:
        a = TieredServer("--kv-transfer-config", tier_config(root))
        first = a.complete()
        text = first["choices"][0]["text"]
        prompt_tokens = first["usage"]["prompt_tokens"]
        check(prompt_tokens > 200, f"prompt has {prompt_tokens} tokens")
        wait_for(lambda: a.metrics().get('strata:kv_tier_chunks{tier="fs"}', 0) > 0,
                 "chunks on disk")
        m = a.metrics()
        check(m['vllm:kv_offload_store_bytes_total'] > 0, "A copied KV to the host tier")
        check(m['vllm:kv_offload_tiering_write_bytes_total{tier="fs"}'] > 0, "A wrote the fs tier")
        a.stop()
        check(len(chunk_files(root)) >= prompt_tokens // 16 - 1,
              f"{len(chunk_files(root))} chunk files in the directory")
        sizes = {os.path.getsize(p) for p in chunk_files(root)}
        check(sizes == {chunk_file_bytes(KV_DTYPE)},
              f"chunk files of {sizes} bytes ({KV_DTYPE or 'auto'} KV: "
              f"{chunk_file_bytes(KV_DTYPE)} expected)")

        b = TieredServer("--kv-transfer-config", tier_config(root))
        second = b.complete()
        m = b.metrics()
        cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        check(second["choices"][0]["text"] == text, "B (reloaded from disk) == A")
        check(cached >= prompt_tokens - 16, f"usage.cached_tokens {cached} of {prompt_tokens}")
        fs_hits = m['strata:kv_tier_hit_tokens_total{tier="fs"}']
        check(fs_hits == cached, f"fs tier served {fs_hits} tokens")
        check(m['vllm:external_prefix_cache_hits_total'] == cached, "external hits counted")
        check(m['vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}'] == cached,
              "prompt tokens by source: external_kv_transfer")
        check(m['vllm:prompt_tokens_by_source_total{source="local_compute"}'] ==
              prompt_tokens - cached, "prompt tokens by source: local_compute")
        check(m['vllm:kv_offload_tiering_chunk_hits_total{tier="fs"}'] > 0, "fs chunk hits")
        b.stop()

        for path in chunk_files(root):
            with open(path, "r+b") as f:
                f.seek(-5, os.SEEK_END)
                byte = f.read(1)
                f.seek(-5, os.SEEK_END)
                f.write(bytes([byte[0] ^ 0xFF]))
        c = TieredServer("--kv-transfer-config", tier_config(root))
        third = c.complete()
        m = c.metrics()
        check(third["choices"][0]["text"] == text, "C (every chunk corrupt) == A")
        check(third["usage"]["prompt_tokens_details"]["cached_tokens"] == 0, "C recomputed")
        check(m['vllm:kv_offload_tiering_promotion_job_failures_total{tier="fs"}'] > 0,
              "C counted the corrupt chunks")
        check(c.healthy(), "C still healthy")
        c.stop()

        plain = TieredServer()
        check(plain.complete()["choices"][0]["text"] == text, "no tiers == A")
        plain.stop()

        bad = [
            ('{"kv_connector":"OffloadingConnector","kv_connector_extra_config":'
             '{"cpu_bytes_to_use":1000000,"evicton_policy":"lru"}}',
             "kv_connector_extra_config.evicton_policy"),
            ('{"kv_connector":"OffloadingConnector","kv_connector_extra_config":'
             '{"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1000000,'
             '"secondary_tiers":[{"type":"fs","root_dir":"/tmp/x","n_write_threads":"8"}]}}',
             "secondary_tiers[0].n_write_threads"),
        ]
        for config, key in bad:
            p = subprocess.run([STRATA, "serve", MODEL, "--port", "0", "--kv-transfer-config",
                                config], capture_output=True, text=True, timeout=60)
            check(p.returncode != 0 and key in p.stderr, f"bad config names {key}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    checks.finish()


if __name__ == "__main__":
    main()
