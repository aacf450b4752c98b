#!/usr/bin/env python3
"""A KV-aware router's view of Strata's KV events, with Debian's python3-zmq and
python3-msgpack (no vLLM code).

Runs events_publish_demo (a scripted KvEventPublisher) on loopback, subscribes to
its PUB socket the way llm-d's indexer does, decodes every event positionally
(array layout) or by name (map layout), checks topic, sequence numbers and
field values, and fetches the batches it missed from the replay (ROUTER)
socket. The demo publishes batches 0 and 1 before printing its endpoints, so
those two are always missed live and only the replay can deliver them.

    kv_events_subscriber_test.py <events_publish_demo> array|map
"""

import math
import select
import struct
import subprocess
import sys
import time

import msgpack
import zmq

TOPIC = "kv@127.0.0.1:0@strata-test"
END_SEQ = struct.pack(">q", -1)
TIMEOUT_S = 20


def h(i):
    """script_hash() of events_publish_demo.cc."""
    return (0x9E3779B97F4A7C15 * (i + 1)) % (1 << 64)


def stored(hashes, parent, tokens, medium, locality=None):
    return ("BlockStored", dict(block_hashes=hashes, parent_block_hash=parent, token_ids=tokens,
                                block_size=16, lora_id=None, medium=medium, lora_name=None),
            locality)


def removed(hashes, medium, locality=None):
    return ("BlockRemoved", dict(block_hashes=hashes, medium=medium), locality)


CLEARED = ("AllBlocksCleared", {}, None)


def script():
    """The batches events_publish_demo publishes, in order."""
    big = []
    for e in range(20):
        hashes = [h(100 + e * 16 + b) for b in range(16)]
        parent = None if e == 0 else h(100 + e * 16 - 1)
        big.append(stored(hashes, parent, [e * 7000 + i * 601 for i in range(256)], "GPU"))
    return [
        [stored([h(0), h(1)], None, list(range(32)), "GPU")],
        [stored([h(2)], h(1), list(range(32, 48)), "GPU"),
         stored([h(0), h(1)], None, [], "CPU", "LOCAL")],
        [stored([h(0)], None, [], "STORAGE", "LOCAL"), removed([h(2)], "GPU")],
        [removed([h(0), h(1)], "CPU", "LOCAL")],
        [CLEARED],
        big,
        [removed([h(3)], "STORAGE", "REMOTE"), CLEARED],
    ]


def expected_wire(event, encoding):
    """What vLLM's msgspec structs decode to: a tagged array (legacy layout,
    no locality) or a tagged map ("type" first, locality only when set)."""
    tag, fields, locality = event
    if encoding == "array":
        return [tag] + list(fields.values())
    wire = {"type": tag, **fields}
    if locality is not None:
        wire["locality"] = locality
    return wire


def fail(message):
    raise AssertionError(message)


def check_payload(payload, expected_events, encoding, start_time):
    batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    # Byte-for-byte: msgpack-python writes the shortest forms, as msgspec does.
    if msgpack.packb(batch, use_bin_type=True) != payload:
        fail("payload is not in the shortest MessagePack forms")
    if not isinstance(batch, list) or len(batch) != 3:
        fail(f"batch is not [ts, events, data_parallel_rank]: {batch!r:.200}")
    ts, events, rank = batch
    if payload[1] != 0xCB or not isinstance(ts, float) or not math.isfinite(ts):
        fail("ts is not a float64")
    if not start_time - 5 <= ts <= time.time() + 5:
        fail(f"ts {ts} is not the publish time")
    if rank != 0:
        fail(f"data_parallel_rank {rank!r}, expected 0")
    if len(events) != len(expected_events):
        fail(f"{len(events)} events, expected {len(expected_events)}")
    for got, want in zip(events, expected_events):
        decoded = decode_event(got, encoding)
        if encoding == "array":
            want = (want[0], want[1], None)  # the legacy layout has no locality
        if decoded != want:
            fail(f"event {got!r:.300}\n decoded as {decoded!r:.300}\n expected {want!r:.300}")
        wire = expected_wire(want, encoding)
        if got != wire or (encoding == "map" and list(got) != list(wire)):
            fail(f"event {got!r:.300}\n expected on the wire {wire!r:.300}")


def decode_event(event, encoding):
    """Decodes one event the way a router does, into script()'s form."""
    if encoding == "array":
        if not isinstance(event, list) or not event or not isinstance(event[0], str):
            fail(f"event is not a tagged array: {event!r:.200}")
        tag = event[0]
        names = {"BlockStored": ["block_hashes", "parent_block_hash", "token_ids", "block_size",
                                 "lora_id", "medium", "lora_name"],
                 "BlockRemoved": ["block_hashes", "medium"],
                 "AllBlocksCleared": []}[tag]
        if len(event) != len(names) + 1:
            fail(f"{tag} has {len(event) - 1} fields, expected {len(names)}")
        return (tag, dict(zip(names, event[1:])), None)
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        fail(f"event is not a tagged map: {event!r:.200}")
    if next(iter(event)) != "type":
        fail("the tag is not the first map entry")
    fields = {k: v for k, v in event.items() if k not in ("type", "locality")}
    return (event["type"], fields, event.get("locality"))


def read_line(proc, deadline):
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            line = proc.stdout.readline()
            if not line:
                fail(f"demo exited early (rc {proc.poll()}): {proc.stderr.read()}")
            return line.split()
    fail("timed out waiting for the demo")


def recv_all(socket, deadline):
    """One multipart message, or None at the deadline."""
    while time.time() < deadline:
        if socket.poll(100):
            return socket.recv_multipart()
    return None


def replay(ctx, endpoint, start_seq, kind):
    """Asks the replay socket for every buffered batch from start_seq.

    kind "dealer": DEALER sending [b"", start] (REQ-style framing);
    kind "bare": DEALER sending [start]; kind "req": a REQ socket, which takes
    one reply only (used where the answer is just the end marker).
    Returns [(seq, payload)] up to and excluding the END_SEQ marker."""
    sock = ctx.socket(zmq.REQ if kind == "req" else zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    start = struct.pack(">Q", start_seq)
    if kind == "dealer":
        sock.send_multipart([b"", start])
    else:
        sock.send(start)
    out = []
    deadline = time.time() + TIMEOUT_S
    while True:
        frames = recv_all(sock, deadline)
        if frames is None:
            fail(f"replay from {start_seq} ({kind}) timed out after {len(out)} batches")
        if kind == "dealer":
            if frames[0] != b"":
                fail(f"replay reply lacks the empty delimiter: {frames!r:.100}")
            frames = frames[1:]
        if len(frames) != 2 or len(frames[0]) != 8:
            fail(f"replay reply is not [seq, payload]: {frames!r:.100}")
        if frames[0] == END_SEQ:
            if frames[1] != b"":
                fail("END_SEQ carries a payload")
            sock.close()
            return out
        out.append((struct.unpack(">Q", frames[0])[0], frames[1]))
        if kind == "req":
            fail("a REQ replay got more than the end marker")


def main():
    demo, encoding = sys.argv[1], sys.argv[2]
    batches = script()
    start_time = time.time()
    proc = subprocess.Popen(
        [demo, "--endpoint", "tcp://127.0.0.1:*", "--replay", "tcp://127.0.0.1:*",
         "--topic", TOPIC, "--encoding", encoding],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ctx = zmq.Context()
    try:
        deadline = time.time() + TIMEOUT_S
        words = read_line(proc, deadline)
        if words[0] != "READY" or len(words) != 3:
            fail(f"unexpected demo line {words}")
        pub_endpoint, replay_endpoint = words[1], words[2]

        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt_string(zmq.SUBSCRIBE, TOPIC)
        sub.connect(pub_endpoint)
        time.sleep(0.5)  # the subscription reaches the PUB socket
        proc.stdin.write("go\n")
        proc.stdin.flush()

        live = {}
        while len(batches) - 1 not in live:
            frames = recv_all(sub, deadline)
            if frames is None:
                fail(f"live stream timed out; got sequence numbers {sorted(live)}")
            if len(frames) != 3:
                fail(f"live message has {len(frames)} frames, expected [topic, seq, payload]")
            topic, seq_bytes, payload = frames
            if topic.decode() != TOPIC:
                fail(f"topic {topic!r}")
            if len(seq_bytes) != 8:
                fail(f"sequence frame of {len(seq_bytes)} bytes")
            seq = struct.unpack(">Q", seq_bytes)[0]
            if live and seq != max(live) + 1:
                fail(f"sequence {seq} after {max(live)}")
            live[seq] = payload
        if 0 in live or 1 in live:
            fail("batches 0 and 1 were sent before any subscriber and cannot arrive live")
        if read_line(proc, deadline) != ["SENT", str(len(batches))]:
            fail("demo did not report every batch sent")

        missed = [s for s in range(len(batches)) if s not in live]
        replayed = dict(replay(ctx, replay_endpoint, min(missed), "dealer"))
        if sorted(replayed) != list(range(min(missed), len(batches))):
            fail(f"replay from {min(missed)} returned {sorted(replayed)}")
        for seq, payload in live.items():
            if replayed[seq] != payload:
                fail(f"replayed batch {seq} differs from the live one")
        bare = replay(ctx, replay_endpoint, len(batches) - 1, "bare")
        if [s for s, _ in bare] != [len(batches) - 1]:
            fail(f"bare DEALER replay returned {[s for s, _ in bare]}")
        if replay(ctx, replay_endpoint, len(batches), "req") != []:
            fail("replay past the end is not just END_SEQ")

        all_payloads = {**replayed, **live}
        for seq, events in enumerate(batches):
            check_payload(all_payloads[seq], events, encoding, start_time)

        proc.stdin.write("quit\n")
        proc.stdin.flush()
        if read_line(proc, deadline) != ["DONE", f"published={len(batches)}", "dropped=0"]:
            fail("demo did not close cleanly")
        if proc.wait(timeout=TIMEOUT_S) != 0:
            fail(f"demo exited with {proc.returncode}")
        num_events = sum(len(b) for b in batches)
        print(f"kv events ({encoding}): {len(batches)} batches, {num_events} events decoded; "
              f"{len(missed)} missed live and fetched by replay")
        print("1 passed, 0 failed")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        ctx.destroy(linger=0)


if __name__ == "__main__":
    main()
