#!/usr/bin/env python3
"""KV events from a real `strata serve`, read the way a KV-aware router does.

Starts the server with a host tier (--kv-offloading-size) and
--kv-events-config (ZMQ PUB + replay ROUTER on free loopback ports),
subscribes with Debian's python3-zmq, sends a prompt, and checks:
  - BlockStored with medium "GPU" carries the prompt's token ids (compared with
    /tokenize), block_size 16 and chained parent hashes;
  - the same hashes arrive as BlockStored "CPU" (host tier);
  - /reset_prefix_cache publishes AllBlocksCleared and BlockRemoved "CPU";
  - sequence numbers are consecutive from 0, and the replay socket returns
    the same payloads byte for byte.
Then a server with a small filesystem tier (max_bytes = two chunk files,
"locality": "LOCAL") and the map event layout: the fs tier's stores arrive as
BlockStored "STORAGE" and its evictions as BlockRemoved "STORAGE", both with
locality "LOCAL", and only hashes announced as stored are announced removed.
Usage: kv_events_e2e.py STRATA_BIN MODEL_DIR
"""
import json
import shutil
import struct
import sys
import tempfile
import time
import urllib.request

import msgpack
import zmq

from strata_server import Checks, Server, free_port

STRATA, MODEL = sys.argv[1], sys.argv[2]
PROMPT = " ".join(["it was the best of times it was the worst of times"] * 12)


def main():
    pub_port, replay_port = free_port(), free_port()
    config = {"enable_kv_cache_events": True, "publisher": "zmq",
              "endpoint": f"tcp://*:{pub_port}", "replay_endpoint": f"tcp://*:{replay_port}",
              "topic": "kv-events"}
    checks = Checks()
    check = checks.check
    server = Server(STRATA, MODEL, "--kv-offloading-size", "0.05", "--kv-events-config",
                    json.dumps(config))
    try:
        ctx = zmq.Context()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"kv-events")
        sub.connect(f"tcp://127.0.0.1:{pub_port}")
        time.sleep(0.5)  # let the subscription reach the publisher

        tokens = server.post("/tokenize", {"model": MODEL, "prompt": PROMPT}, timeout=60)["tokens"]
        server.post("/v1/completions", {"model": MODEL, "prompt": PROMPT, "max_tokens": 4,
                                        "temperature": 0}, timeout=60)
        time.sleep(0.5)  # the host tier's copies land on a later engine step
        server.post("/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1},
                    timeout=60)
        urllib.request.urlopen(urllib.request.Request(server.base + "/reset_prefix_cache", b"",
                                                      method="POST"), timeout=30).read()
        messages = []
        poller = zmq.Poller()
        poller.register(sub, zmq.POLLIN)
        end = time.time() + 5
        while time.time() < end:
            if poller.poll(200):
                messages.append(sub.recv_multipart())
        check(len(messages) > 0, f"{len(messages)} event batches received")
        seqs = [struct.unpack(">Q", m[1])[0] for m in messages]
        check(all(m[0] == b"kv-events" for m in messages), "topic on every message")
        check(seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"consecutive seq {seqs[:3]}...")
        events = []
        for m in messages:
            batch = msgpack.unpackb(m[2], raw=False)
            check(isinstance(batch[0], float) and isinstance(batch[1], list), "batch layout")
            events.extend(batch[1])
        gpu = [e for e in events if e[0] == "BlockStored" and e[6] == "GPU"]
        cpu = [e for e in events if e[0] == "BlockStored" and e[6] == "CPU"]
        full = len(tokens) // 16
        first = gpu[0] if gpu else None
        check(first is not None and first[3] == tokens[:16 * len(first[1])],
              "GPU BlockStored carries the prompt's token ids")
        check(first is not None and first[2] is None and first[4] == 16,
              "first block has no parent; block_size 16")
        gpu_hashes = [h for e in gpu for h in e[1]]
        check(len(gpu_hashes) >= full, f"{len(gpu_hashes)} GPU block hashes for {full} full blocks")
        chained = all(e[2] == gpu_hashes[gpu_hashes.index(e[1][0]) - 1] for e in gpu[1:]
                      if e[1][0] in gpu_hashes and gpu_hashes.index(e[1][0]) > 0)
        check(chained, "parent hashes chain the GPU events")
        cpu_hashes = {h for e in cpu for h in e[1]}
        check(set(gpu_hashes[:full]) <= cpu_hashes, "the host tier announced the same blocks (CPU)")
        check(any(e[0] == "AllBlocksCleared" for e in events), "reset published AllBlocksCleared")
        check(any(e[0] == "BlockRemoved" and e[2] == "CPU" for e in events),
              "reset published BlockRemoved CPU")

        dealer = ctx.socket(zmq.DEALER)
        dealer.connect(f"tcp://127.0.0.1:{replay_port}")
        dealer.send_multipart([b"", struct.pack(">q", seqs[0])])
        replayed = {}
        end = time.time() + 10
        while time.time() < end:
            if not dealer.poll(1000):
                continue
            frames = dealer.recv_multipart()
            seq, payload = frames[-2], frames[-1]
            if seq == struct.pack(">q", -1):
                break
            replayed[struct.unpack(">Q", seq)[0]] = payload
        check(all(replayed.get(s) == m[2] for s, m in zip(seqs, messages)),
              f"replay returned the same {len(replayed)} payloads")
        ctx.destroy(linger=0)
    finally:
        server.stop()
    check_storage_events(checks)
    checks.finish()


def collect(sub, seconds):
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    events = []
    end = time.time() + seconds
    while time.time() < end:
        if poller.poll(200):
            events.extend(msgpack.unpackb(sub.recv_multipart()[2], raw=False)[1])
    return events


def check_storage_events(checks):
    check = checks.check
    pub_port = free_port()
    root = tempfile.mkdtemp(prefix="strata-events-fs-")
    events_config = {"enable_kv_cache_events": True, "publisher": "zmq",
                     "endpoint": f"tcp://*:{pub_port}", "topic": "kv-events",
                     "event_encoding": "map"}
    chunk_file = 96 + 6 * 2 * 16 * 2 * 64 * 4  # header + one f32 chunk of the bundled model
    tiers = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
             "kv_connector_extra_config": {
                 "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 64 << 20,
                 "secondary_tiers": [{"type": "fs", "root_dir": root, "max_bytes": 2 * chunk_file,
                                      "locality": "LOCAL"}]}}
    server = Server(STRATA, MODEL, "--kv-transfer-config", json.dumps(tiers),
                    "--kv-events-config", json.dumps(events_config), name="fs-events")
    try:
        ctx = zmq.Context()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"kv-events")
        sub.connect(f"tcp://127.0.0.1:{pub_port}")
        time.sleep(0.5)
        server.post("/v1/completions", {"model": MODEL, "prompt": PROMPT, "max_tokens": 4,
                                        "temperature": 0}, timeout=60)
        time.sleep(0.5)
        server.post("/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1},
                    timeout=60)
        events = collect(sub, 3)
        stored = [e for e in events if e["type"] == "BlockStored" and e["medium"] == "STORAGE"]
        removed = [e for e in events if e["type"] == "BlockRemoved" and e["medium"] == "STORAGE"]
        check(len(stored) > 0 and all(e.get("locality") == "LOCAL" for e in stored),
              f"{len(stored)} BlockStored STORAGE events with locality LOCAL")
        check(len(removed) > 0 and all(e.get("locality") == "LOCAL" for e in removed),
              f"{len(removed)} BlockRemoved STORAGE events (fs evictions) with locality LOCAL")
        stored_hashes = {h for e in stored for h in e["block_hashes"]}
        removed_hashes = [h for e in removed for h in e["block_hashes"]]
        check(set(removed_hashes) <= stored_hashes,
              f"the {len(removed_hashes)} removed hashes were announced as stored")
        cpu = [e for e in events if e["medium"] == "CPU"]
        check(all("locality" not in e for e in cpu), "host-tier events carry no locality")
        ctx.destroy(linger=0)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
