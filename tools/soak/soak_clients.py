"""The client threads: Worker (the loop: gate, request budget, driver
exceptions) and one subclass per kind of traffic, StreamClient,
DisconnectClient, MalformedClient, LongPrefixClient and ProbeClient.

Each Worker runs in its own thread with its own seeded random generator;
what they share goes through the Soak object and its Stats."""
import http.client
import json
import random
import socket
import struct
import threading
import time
import traceback

from soak_http import (HTTP_TIMEOUT_S, error_message, http_body_of, http_call, raw_exchange,
                       stream_request)
from soak_malformed import malformed_catalogue
from soak_probes import check_probe, long_text, words

LINGER_RST = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST


class Worker(threading.Thread):
    """Loops step() until the soak stops or the request budget is spent."""

    kind = "worker"
    pauses = False  # True: wait --pause between requests

    def __init__(self, soak, idx):
        super().__init__(name=f"{self.kind}-{idx}", daemon=True)
        self.soak = soak
        self.stats = soak.stats
        kind_salt = sum(map(ord, self.kind))  # str hash() differs per process
        self.rng = random.Random(soak.cfg.seed * 7919 + idx * 104729 + kind_salt)

    def run(self):
        while self.soak.enter():
            try:
                if not self.stats.take_request():
                    return self.soak.halt("--max-requests reached")
                self.step()
            except Exception:  # a bug in the driver must not pass silently
                self.stats.fail(self.kind, "driver_exception", traceback.format_exc())
            finally:
                self.soak.leave()
            if self.pauses:
                self.soak.stop.wait(self.soak.cfg.pause)

    def step(self):
        raise NotImplementedError

    def well_formed_failure(self, reason, detail):
        # A request the client did not break: a failure unless the soak is
        # stopping and the server is going away under it.
        if self.soak.stop.is_set() and not self.soak.server.is_alive():
            self.stats.count(self.kind, "aborted_at_stop")
        else:
            self.stats.fail(self.kind, reason, detail)


def short_request(rng, endpoint, stream):
    body = {"max_tokens": rng.randint(8, 48), "temperature": rng.choice([0, 0.7, 1.0]),
            "stream": stream}
    if stream and rng.random() < 0.5:
        body["stream_options"] = {"include_usage": True}
    if endpoint == "/v1/completions":
        body["prompt"] = words(rng, rng.randint(5, 60))
    else:
        body["messages"] = [{"role": "user", "content": words(rng, rng.randint(3, 40))}]
    return body


class StreamClient(Worker):
    kind = "stream"

    def step(self):
        endpoint = self.rng.choice(["/v1/completions", "/v1/chat/completions"])
        try:
            _, num_events, problem = stream_request(self.soak, endpoint,
                                                    short_request(self.rng, endpoint, True))
        except (OSError, http.client.HTTPException) as e:
            return self.well_formed_failure("connection_error", repr(e))
        if problem:
            return self.well_formed_failure(problem.split(":")[0], problem)
        self.stats.count(self.kind, "ok" if num_events else "ok_empty")


class DisconnectClient(Worker):
    """Goes away at a random point: the server must free the request and carry on."""

    kind = "disconnect"
    pauses = True
    MODES = ("mid_stream", "mid_stream_rst", "mid_generation", "mid_body", "mid_headers")

    def step(self):
        mode = self.rng.choice(self.MODES)
        endpoint = self.rng.choice(["/v1/completions", "/v1/chat/completions"])
        body = short_request(self.rng, endpoint, mode.startswith("mid_stream"))
        body["max_tokens"] = 200
        body["ignore_eos"] = True
        data = json.dumps(body).encode()
        head = (f"POST {endpoint} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode()
        try:
            sock = socket.create_connection(("127.0.0.1", self.soak.port), timeout=HTTP_TIMEOUT_S)
        except OSError as e:
            return self.well_formed_failure("connection_error", repr(e))
        try:
            outcome = getattr(self, mode)(sock, head, data)
        except OSError as e:
            outcome = f"socket_error_{type(e).__name__}"
        finally:
            if mode == "mid_stream_rst":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                LINGER_RST)
            sock.close()
        self.stats.count(self.kind, f"{mode} {outcome}")

    def mid_stream(self, sock, head, data):
        sock.sendall(head + data)
        seen, want = b"", self.rng.randint(1, 4)
        while seen.count(b"data: ") < want:
            block = sock.recv(4096)
            if not block:
                return "server_closed_first"
            seen += block
        if not seen.startswith(b"HTTP/1.1 200"):
            return "status_" + seen[9:12].decode(errors="replace")
        return "left"

    mid_stream_rst = mid_stream

    def mid_generation(self, sock, head, data):
        sock.sendall(head + data)
        time.sleep(self.rng.uniform(0.0, 0.3))
        return "left"

    def mid_body(self, sock, head, data):
        sock.sendall(head + data[: len(data) // 2])
        time.sleep(self.rng.uniform(0.0, 0.1))
        return "left"

    def mid_headers(self, sock, head, data):
        sock.sendall(head[: self.rng.randint(1, len(head) - 1)])
        return "left"


class MalformedClient(Worker):
    """Each catalogue entry must get a 4xx whose JSON body has a non-empty error message."""

    kind = "malformed"
    pauses = True

    def __init__(self, soak, idx):
        super().__init__(soak, idx)
        self.catalogue = [c for c in malformed_catalogue(soak.max_request_body,
                                                         soak.cfg.max_model_len)
                          if c[0] not in soak.cfg.skip_case]
        self.next_idx = idx * 7

    def step(self):
        name, raw, is_framing = self.catalogue[self.next_idx % len(self.catalogue)]
        self.next_idx += 1
        try:
            status, answer = raw_exchange(self.soak.port, raw, timeout=HTTP_TIMEOUT_S)
        except OSError as e:
            return self.stats.fail(self.kind, f"{name} connection_error", repr(e))
        with self.stats.lock:
            self.stats.malformed[f"{name} {status or 'no_answer'}"] += 1
        if status is None and is_framing and self.soak.cfg.allow_framing_close:
            return self.stats.count(self.kind, "framing_closed_without_answer")
        if status is None:
            return self.stats.fail(self.kind, f"{name} no_answer",
                                   f"{name}: connection closed without an HTTP answer; "
                                   f"request starts {raw[:160]!r}")
        if not 400 <= status < 500:
            return self.stats.fail(self.kind, f"{name} status_{status}",
                                   f"{name}: {answer[:400]!r}")
        if error_message(http_body_of(answer)) is None:
            return self.stats.fail(self.kind, f"{name} no_error_message",
                                   f"{name}: {answer[:400]!r}")
        self.stats.count(self.kind, "4xx_with_message")


class LongPrefixClient(Worker):
    """A few long prefixes, varied suffixes: chunks go down the tiers and come back."""

    kind = "long_prefix"
    NUM_PREFIXES = 8

    def __init__(self, soak, idx):
        super().__init__(soak, idx)
        self.prefixes = [long_text(1000 + i, 220) for i in range(self.NUM_PREFIXES)]

    def step(self):
        prompt = self.rng.choice(self.prefixes) + " " + words(self.rng, self.rng.randint(1, 12))
        body = {"prompt": prompt, "max_tokens": self.rng.randint(4, 16), "temperature": 0}
        if self.rng.random() < 0.3:
            body["stream"] = True
            try:
                _, _, problem = stream_request(self.soak, "/v1/completions", body)
            except (OSError, http.client.HTTPException) as e:
                return self.well_formed_failure("connection_error", repr(e))
            if problem:
                return self.well_formed_failure(problem.split(":")[0], problem)
            return self.stats.count(self.kind, "ok")
        try:
            r = http_call(self.soak.port, "POST", "/v1/completions", body)
        except (OSError, http.client.HTTPException) as e:
            return self.well_formed_failure("connection_error", repr(e))
        if r.status != 200:
            return self.well_formed_failure(f"status_{r.status}", r.body[:400])
        cached = (r.json()["usage"].get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        self.stats.count(self.kind, "ok_cached" if cached else "ok_uncached")


class ProbeClient(Worker):
    """Probes under load (batched with everyone else), sometimes after a reset."""

    kind = "probe"

    def step(self):
        if self.rng.random() < 0.3:
            self.reset_prefix_cache()
        check_probe(self.soak, self.kind, self.rng.choice(self.soak.probes),
                    self.rng.random() < 0.4, self.well_formed_failure)

    def reset_prefix_cache(self):
        try:
            r = http_call(self.soak.port, "POST", "/reset_prefix_cache", b"", timeout=30)
        except (OSError, http.client.HTTPException) as e:
            return self.well_formed_failure("reset_connection_error", repr(e))
        if r.status == 200:
            self.stats.count("reset_prefix_cache", "done")
        elif r.status == 503:  # requests hold blocks: documented refusal
            self.stats.count("reset_prefix_cache", "refused_busy")
        else:
            self.stats.fail("reset_prefix_cache", f"status_{r.status}", r.body[:300])


WORKER_CLASSES = (("streamers", StreamClient), ("disconnectors", DisconnectClient),
                  ("malformed", MalformedClient), ("long_prefix", LongPrefixClient),
                  ("probers", ProbeClient))
