#!/usr/bin/env python3
"""A cache must never cause an outage: `strata serve` with tiers whose storage
is damaged or answers errors at startup.

fs tier:
  1. A server creates the tier's namespace; format.txt is then overwritten
     with garbage. The next server starts, serves, rewrites format.txt and
     warns (the chunk files are verified one by one anyway).
  2. format.txt is replaced by a directory (unreadable: EISDIR). The server
     starts, serves by recompute, reports strata:kv_tier_up{tier="fs"} 0 and
     counts failed starts; once the directory is removed the tier comes up in
     the background (kv_tier_up 1) and stores chunks again.
  3. A format.txt naming another format still stops startup (configuration).
obj tier (skipped without node and tools/s3-server/node_modules):
  4. s3rver behind tools/s3-server/fault_proxy.py answering the startup probe
     with one 500: the server starts, the tier comes up after a retry and
     stores chunks.
  5. A missing bucket and a wrong secret still stop startup.
Usage: tier_outage_e2e.py STRATA_BIN MODEL_DIR SOURCE_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from strata_server import Checks, Server, wait_for

STRATA, MODEL, SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
PROMPT = " ".join(["the sea was calm and the ship sailed on through the night"] * 10)
ACCESS_KEY, SECRET_KEY = "STRATA-TEST-KEY", "strata-test-secret"


def transfer_config(tier):
    tier = {**tier, "retry_initial_ms": 100, "retry_max_ms": 400}
    return json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {
                           "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 64 << 20,
                           "secondary_tiers": [tier]}})


def fs_tier(root):
    return {"type": "fs", "root_dir": root, "n_read_threads": 1, "n_write_threads": 1}


def serve(tier, name):
    return Server(STRATA, MODEL, "--kv-transfer-config", transfer_config(tier), name=name)


def startup_error(tier):
    r = subprocess.run([STRATA, "serve", MODEL, "--host", "127.0.0.1", "--port", "0",
                        "--kv-transfer-config", transfer_config(tier)],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stderr


def complete(server, prompt=PROMPT):
    r = server.post("/v1/completions", {"model": MODEL, "prompt": prompt, "max_tokens": 4,
                                        "temperature": 0})
    return r["choices"][0]["text"]


def tier_metric(server, name, tier):
    # /metrics shows the engine's snapshot after its last step: take a step first.
    server.post("/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
    return server.metrics().get(f'{name}{{tier="{tier}"}}')


def check_fs(check, tmp):
    root = os.path.join(tmp, "kv")
    first = serve(fs_tier(root), "fs-first")
    try:
        reference = complete(first)
    finally:
        first.stop()
    (fmt,) = glob.glob(os.path.join(root, "*", "format.txt"))
    with open(fmt) as f:
        want = f.read()

    with open(fmt, "wb") as f:
        f.write(b"\x00\xffgarbage")
    server = serve(fs_tier(root), "fs-damaged")
    try:
        check(complete(server) == reference, "damaged format.txt: the server starts and serves")
        with open(fmt) as f:
            check(f.read() == want, "damaged format.txt is rewritten")
        check("is damaged" in server.text_log(), "the rewrite is logged")
        check(tier_metric(server, "strata:kv_tier_up", "fs") == 1, "the fs tier is up")
    finally:
        server.stop()

    os.remove(fmt)
    os.mkdir(fmt)
    server = serve(fs_tier(root), "fs-unreadable")
    try:
        check(complete(server) == reference, "unreadable format.txt: the server starts and serves")
        check(tier_metric(server, "strata:kv_tier_up", "fs") == 0,
              'strata:kv_tier_up{tier="fs"} 0 while it cannot start')
        wait_for(lambda: tier_metric(server, "strata:kv_tier_start_failures_total", "fs") >= 2,
                 "retries counted", timeout=20)
        check(True, "failed starts are counted and retried")
        check("fs tier: cannot start" in server.text_log(), "the outage is logged")
        os.rmdir(fmt)
        wait_for(lambda: tier_metric(server, "strata:kv_tier_up", "fs") == 1, "the fs tier up",
                 timeout=20)
        check(True, "the fs tier comes up once repaired")
        before = tier_metric(server, "vllm:kv_offload_tiering_write_bytes_total", "fs")
        complete(server, " ".join(["a new prompt whose chunks no tier has seen yet"] * 10))
        wait_for(lambda: tier_metric(server, "vllm:kv_offload_tiering_write_bytes_total", "fs")
                 > before, "fs stores after recovery", timeout=20)
        check(True, "the recovered fs tier stores chunks")
        series_filled = ('strata:kv_tier_write_seconds_count{tier="fs"}',
                         'strata:kv_tier_write_seconds_count{tier="cpu"}',
                         'vllm:kv_offload_tiering_lookup_sync_delay_seconds_count{tier="fs"}',
                         'vllm:kv_offload_tiering_lookup_async_delay_seconds_count{tier="fs"}')

        def histograms_filled():
            # A finished write job is recorded when the engine thread collects it, and
            # /metrics shows what the last engine step published: step once more.
            complete(server, "a short prompt")
            m = server.metrics()
            return all(m.get(series, 0) > 0 for series in series_filled)
        wait_for(histograms_filled, "latency histograms", timeout=20)
        m = server.metrics()
        for series in series_filled:
            check(m.get(series, 0) > 0, f"latency histogram {series} = {m.get(series)}")
        check(m.get('strata:kv_tier_write_seconds_bucket{tier="fs",le="+Inf"}') ==
              m.get('strata:kv_tier_write_seconds_count{tier="fs"}'), "buckets add up")
    finally:
        server.stop()

    other = want.replace("model=", "model=another-", 1)
    with open(fmt, "w") as f:
        f.write(other)
    code, err = startup_error(fs_tier(root))
    check(code != 0 and "another KV format" in err,
          "a format.txt naming another format still stops startup: " + err.strip()[-200:])


class Child:
    """A helper process that prints 'listening <port>' when ready."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening "):
            raise RuntimeError(f"{argv[0]} did not start: {line!r}")
        self.port = int(line.split()[1])

    def command(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def stop(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def obj_tier(port, **overrides):
    return {"type": "obj", "bucket": "kv", "endpoint_override": f"http://127.0.0.1:{port}",
            "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "io_threads": 2,
            "connect_timeout_ms": 500, "request_timeout_ms": 5000, **overrides}


def check_obj(check, tmp):
    tools = os.path.join(SOURCE, "tools", "s3-server")
    if not shutil.which("node") or not os.path.isdir(os.path.join(tools, "node_modules")):
        print("skip obj checks: node or tools/s3-server/node_modules missing")
        return
    s3 = Child(["node", "--openssl-legacy-provider", os.path.join(tools, "serve.cjs"), "0",
                os.path.join(tmp, "s3"), "kv"])
    proxy = Child([sys.executable, os.path.join(tools, "fault_proxy.py"), "0", str(s3.port)])
    try:
        check(proxy.command("mode error500_once") == "ok error500_once", "proxy armed")
        server = serve(obj_tier(proxy.port), "obj-500")
        try:
            check(complete(server) != "", "one 500 at the startup probe: the server serves")
            wait_for(lambda: tier_metric(server, "strata:kv_tier_up", "obj") == 1,
                     "the obj tier up", timeout=20)
            check(tier_metric(server, "strata:kv_tier_start_failures_total", "obj") == 1,
                  "one failed start counted, then up")
            complete(server, " ".join(["chunks for the bucket after the retry"] * 10))
            wait_for(lambda: tier_metric(server, "vllm:kv_offload_tiering_write_bytes_total",
                                         "obj") > 0, "obj stores", timeout=20)
            check(True, "the obj tier stores chunks after the retry")
        finally:
            server.stop()
        code, err = startup_error(obj_tier(s3.port, bucket="no-such-bucket"))
        check(code != 0 and "does not exist" in err, "a missing bucket still stops startup")
        code, err = startup_error(obj_tier(s3.port, secret_key="wrong-secret"))
        check(code != 0 and "secret key is wrong" in err, "a wrong secret still stops startup")
    finally:
        proxy.stop()
        s3.stop()


def main():
    checks = Checks()
    tmp = tempfile.mkdtemp(prefix="strata-outage-e2e-")
    try:
        check_fs(checks.check, tmp)
        check_obj(checks.check, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    checks.finish()


if __name__ == "__main__":
    main()
