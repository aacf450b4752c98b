#!/usr/bin/env python3
"""End-to-end check of the peer-to-peer KV tier through `strata serve`.

Every server runs the bundled model on loopback with its own HTTP port and p2p
port; a server without tiers gives the reference (recomputed) texts.
(a) A answers a long prompt; B (peer of A) answers it with the prefix loaded
    from A: same text, usage.cached_tokens and /metrics credit the p2p tier.
(b) A slow peer (STRATA_P2P_TEST_SERVE_DELAY_MS) is SIGKILLed while E loads
    from it: E's request still succeeds with the same text (recomputed), the
    failed loads are counted, E stays healthy.
(c) C has the wrong secret: nothing is transferred, same text, both logs say so.
(d) Prefill/decode split: A prefills with kv_transfer_params
    {"do_remote_decode": true} and answers with the decoder's
    kv_transfer_params; D (no configured peers) decodes with them, loading the
    prefix from A: same text as one instance. Streaming prefills carry the
    params in their final chunk.
    D allows A through allowed_remote_peers; a request naming any other
    host:port (here a listener on 127.0.0.1) is answered by recompute and the
    listener never sees a connection; D counts and logs the refusal.
(e) Startup errors: no secret ("no secret, no transfer"), an unknown key.
Usage: p2p_e2e.py STRATA_BIN MODEL_DIR
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from strata_server import Checks, Server, free_port, wait_for

STRATA, MODEL = sys.argv[1], sys.argv[2]
SECRET = "p2p-e2e-shared-secret-0123456789"
WORDS = ("the whale ship sea captain said it was a truth universally acknowledged that a "
         "single man in possession of a good fortune must be in want of a wife and the "
         "lord spoke unto the people of the land").split()


def prompt(seed, n=300):
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n))


PROMPT_A, PROMPT_B, PROMPT_D = prompt(0), prompt(3), prompt(5)
P2P = 'tier="p2p"'


def tier_config(port, peers=(), secret=SECRET, **extra):
    tier = {"type": "p2p", "host": "127.0.0.1", "port": port,
            "peers": [f"127.0.0.1:{p}" for p in peers], "secret": secret, "num_threads": 4,
            "connect_timeout_ms": 500, "io_timeout_ms": 3000, **extra}
    return json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {
                           "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 64 << 20,
                           "secondary_tiers": [tier]}})


class PeerServer(Server):
    def __init__(self, name, *extra, env=None):
        super().__init__(STRATA, MODEL, "--kv-cache-memory", "8MiB", *extra, name=name, env=env)

    def complete(self, text, max_tokens=24, **extra):
        return self.post("/v1/completions", {"model": MODEL, "prompt": text,
                                             "max_tokens": max_tokens, "temperature": 0,
                                             "ignore_eos": True, **extra})

    def stream(self, text, **extra):
        req = urllib.request.Request(
            self.base + "/v1/completions",
            json.dumps({"model": MODEL, "prompt": text, "max_tokens": 1, "temperature": 0,
                        "stream": True, **extra}).encode(),
            {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            body = r.read().decode()
        return [json.loads(line[6:]) for line in body.splitlines()
                if line.startswith("data: {")]

    def tier(self, series):
        return self.metrics().get(f"{series}{{{P2P}}}", 0.0)


def eventually(predicate, timeout=5):
    try:
        wait_for(predicate, "", timeout)
        return True
    except AssertionError:
        return False


def text_of(response):
    return response["choices"][0]["text"]


def cached_of(response):
    return response["usage"]["prompt_tokens_details"]["cached_tokens"]


def main():
    checks = Checks()
    check = checks.check
    servers = []

    def start(name, *extra, env=None):
        s = PeerServer(name, *extra, env=env)
        servers.append(s)
        return s

    started = time.time()
    try:
        plain = start("plain")
        ref = {p: text_of(plain.complete(p)) for p in (PROMPT_A, PROMPT_B, PROMPT_D)}
        plain.stop()

        # (a) B loads A's prefix from A.
        pa, pb = free_port(), free_port()
        a = start("A", "--kv-transfer-config", tier_config(pa, peers=[pb]))
        first = a.complete(PROMPT_A)
        n_prompt = first["usage"]["prompt_tokens"]
        full = (n_prompt - 1) // 16 * 16  # whole chunks; the last token is always computed
        check(text_of(first) == ref[PROMPT_A], "A == no tiers")
        check(n_prompt > 200, f"the prompt has {n_prompt} tokens")
        wait_for(lambda: a.tier("strata:kv_tier_chunks") >= full // 16, "A to expose its chunks")
        b = start("B", "--kv-transfer-config", tier_config(pb, peers=[pa]))
        second = b.complete(PROMPT_A)
        m = b.metrics()
        check(text_of(second) == ref[PROMPT_A], "B (prefix from peer A) == no tiers")
        check(cached_of(second) == full, f"B usage.cached_tokens {cached_of(second)} == {full}")
        check(m[f"strata:kv_tier_hit_tokens_total{{{P2P}}}"] == full,
              f"B's p2p tier served {m[f'strata:kv_tier_hit_tokens_total{{{P2P}}}']} tokens")
        check(m[f"vllm:kv_offload_tiering_read_bytes_total{{{P2P}}}"] > 0, "B read bytes from A")
        check(m["vllm:external_prefix_cache_hits_total"] == full, "external prefix hits counted")
        check(m[f"vllm:kv_offload_tiering_promotion_job_failures_total{{{P2P}}}"] == 0,
              "no failed loads")

        # (c) Wrong secret: no transfer, same text.
        c = start("C", "--kv-transfer-config",
                  tier_config(free_port(), peers=[pa], secret="a-different-secret-0123456789"))
        third = c.complete(PROMPT_A)
        check(text_of(third) == ref[PROMPT_A], "C (wrong secret) == no tiers")
        check(cached_of(third) == 0, "C recomputed")
        check(c.tier("strata:kv_tier_hit_tokens_total") == 0, "C loaded nothing from a peer")
        check(eventually(lambda: "authentication failed" in c.text_log()),
              "C's log says authentication failed")
        check(eventually(lambda: "refused peer" in a.text_log()), "A's log says it refused C")
        check(c.healthy(), "C healthy")

        # (d) Prefill on A, decode on D (no configured peers: only the named, allowed one).
        d = start("D", "--kv-transfer-config",
                  tier_config(free_port(), allowed_remote_peers=[f"127.0.0.1:{pa}"]))
        prefill = a.complete(PROMPT_D, max_tokens=1, kv_transfer_params={"do_remote_decode": True})
        params = prefill.get("kv_transfer_params")
        check(params == {"do_remote_prefill": True, "do_remote_decode": False,
                         "remote_host": "127.0.0.1", "remote_port": pa},
              f"the prefiller answers kv_transfer_params {params}")
        decode = d.complete(PROMPT_D, kv_transfer_params=params)
        n_pd = decode["usage"]["prompt_tokens"]
        check(text_of(decode) == ref[PROMPT_D], "P/D (prefill A, decode D) == one instance")
        check(cached_of(decode) == (n_pd - 1) // 16 * 16,
              f"D loaded {cached_of(decode)} of {n_pd} prompt tokens from A")
        check(d.tier("strata:kv_tier_hit_tokens_total") == cached_of(decode),
              "D's p2p tier is credited")
        # A request naming a host:port nobody allowed: no connection, recompute.
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(1.0)
        probe = {**params, "remote_port": listener.getsockname()[1]}
        steered = d.complete(PROMPT_B, kv_transfer_params=probe)
        nested = d.complete(PROMPT_A, kv_transfer_params={
            "remote_prefiller": {"remote_host": "127.0.0.1",
                                 "remote_port": listener.getsockname()[1]}})
        connections = 0
        try:
            while True:
                conn, _ = listener.accept()
                connections += 1
                conn.close()
        except socket.timeout:
            pass
        listener.close()
        check(connections == 0, f"a peer nobody allowed sees no connection ({connections})")
        check(text_of(steered) == ref[PROMPT_B] and cached_of(steered) == 0 and
              text_of(nested) == ref[PROMPT_A],
              "requests naming it are answered by recompute")
        check(d.tier("strata:kv_tier_remote_peers_refused_total") == 2,
              "D counts the refused requests")
        check("neither in peers nor matched by allowed_remote_peers" in d.text_log(),
              "D logs the refusal")
        plain_answer = a.complete(PROMPT_D, max_tokens=1)
        check("kv_transfer_params" not in plain_answer, "no kv_transfer_params unless asked")
        chunks = a.stream(PROMPT_D, kv_transfer_params={"do_remote_decode": True})
        final = [ch for ch in chunks if ch.get("choices") and ch["choices"][0]["finish_reason"]]
        check(bool(final) and final[-1].get("kv_transfer_params", {}).get("remote_port") == pa,
              "a streamed prefill carries kv_transfer_params in its final chunk")

        # (b) The peer dies mid-transfer: E recomputes.
        p_slow = free_port()
        slow = start("A2", "--kv-transfer-config", tier_config(p_slow),
                     env={"STRATA_P2P_TEST_SERVE_DELAY_MS": "300"})
        n_b = slow.complete(PROMPT_B)["usage"]["prompt_tokens"]
        wait_for(lambda: slow.tier("strata:kv_tier_chunks") >= (n_b - 1) // 16,
                 "A2 to expose its chunks")
        e = start("E", "--kv-transfer-config", tier_config(free_port(), peers=[p_slow]))
        result = {}
        worker = threading.Thread(target=lambda: result.update(r=e.complete(PROMPT_B)))
        worker.start()
        # Kill once the first chunks have arrived: the rest are in flight.
        wait_for(lambda: e.tier("vllm:kv_offload_tiering_read_bytes_total") > 0,
                 "E to start loading from A2")
        slow.proc.kill()
        slow.proc.wait(timeout=30)
        worker.join(timeout=90)
        check("r" in result, "E's request succeeded after its peer died")
        if "r" in result:
            check(text_of(result["r"]) == ref[PROMPT_B], "E (peer killed mid-transfer) == no tiers")
            check(cached_of(result["r"]) < (n_b - 1) // 16 * 16,
                  f"E recomputed part of the prompt (cached {cached_of(result['r'])})")
        check(e.tier("vllm:kv_offload_tiering_promotion_job_failures_total") > 0,
              "E counted the failed loads")
        check(e.healthy(), "E healthy")
        again = e.complete(PROMPT_B)  # the peer is gone: misses, not errors
        check(text_of(again) == ref[PROMPT_B], "E answers again with its peer gone")

        # (e) Startup errors.
        env = {k: v for k, v in os.environ.items() if k != "STRATA_P2P_SECRET"}
        no_secret = json.loads(tier_config(free_port()))
        del no_secret["kv_connector_extra_config"]["secondary_tiers"][0]["secret"]
        bad = [(json.dumps(no_secret), "no secret, no transfer"),
               (tier_config(free_port(), prot=1), "secondary_tiers[0].prot")]
        for config, expected in bad:
            p = subprocess.run([STRATA, "serve", MODEL, "--port", "0", "--kv-cache-memory", "8MiB",
                                "--kv-transfer-config", config],
                               capture_output=True, text=True, timeout=60, env=env)
            check(p.returncode != 0 and expected in p.stderr, f"startup fails naming '{expected}'")
    finally:
        for s in servers:
            try:
                s.stop()
            except Exception as err:  # a server that is already gone
                print(f"stopping {s.name}: {err}")
    print(f"{time.time() - started:.1f} s")
    checks.finish()


if __name__ == "__main__":
    main()
