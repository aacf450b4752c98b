#!/usr/bin/python3
"""Soak test for `strata serve`: hostile traffic and a hostile disk, for a bounded time.

Run through scripts/soak.sh (Python 3 standard library only; loopback only).

Design
------
1. Quota.  The fs tier's directory must sit on a size-limited filesystem so that
   "the disk is full" is real.  The driver re-executes itself under
   `unshare -rm` (user + mount namespace, no privileges needed) and mounts a
   tmpfs of --quota-mib there; the servers it starts live in that namespace
   too (their network is still the host's loopback).  Where user namespaces
   are unavailable it falls back to a plain directory and the tier's own
   `max_bytes` cap, never fills the real disk, and says so in the report
   ("quota": "max_bytes (simulated)").
2. References.  A reference server (no tiers, default KV memory: pure
   recompute) answers every probe (greedy, ignore_eos, fixed max_tokens);
   its texts are the expected answers.
3. Soak.  The soak server runs with a small KV pool, a small host tier and
   an fs tier on the quota.  Worker threads, each a small class:
     StreamClient      streams completions and chat; every SSE event must be
                       JSON, the stream must end with [DONE].
     DisconnectClient  leaves mid-stream (FIN or RST), mid-generation, mid-body
                       and mid-headers.
     MalformedClient   cycles through malformed_catalogue() (bad JSON, wrong
                       types, every documented limit, oversized bodies, HTTP
                       framing errors); each must get a 4xx whose body is
                       UTF-8 JSON with a non-empty error.message.
     LongPrefixClient  repeats a few long prefixes with varied suffixes, so
                       chunks flow pool -> host -> fs and back.
     ProbeClient       sends a probe (sometimes after POST /reset_prefix_cache,
                       streamed or not) and compares its text with the
                       reference: any difference is a wrong output.
   QuietRounds, every --quiet-every s, pauses the clients (a gate), waits
   for the engine to drain, resets the prefix cache (pool + host tier) and
   checks every probe alone, so long prefixes come back from the fs tier.
   FaultInjector corrupts (payload or header bytes), truncates and deletes
   chunk files, removes shard directories, and fills the quota to ENOSPC
   for a while; it never touches a path outside the tier's root.
   Monitor checks every 0.5 s that the server process lives and samples its
   VmRSS, and every second that GET /health answers 200.
4. End.  At --duration seconds or --max-requests requests, workers stop; the
   server must drain to zero running requests; /metrics is read; the report
   (stdout + JSON at --report) says PASS or FAIL with reasons.  Exit code 0
   only on PASS.  Servers are stopped and temporary directories removed on
   every exit path (Ctrl-C and SIGTERM included); a server also dies with the
   driver (PR_SET_PDEATHSIG) if the driver is killed outright.
"""
import argparse
import collections
import ctypes
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MIB = 1 << 20
CHUNK_HEADER_BYTES = 96  # offload/tiers/chunk_format.h
HTTP_TIMEOUT_S = 120
LINGER_RST = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST


# ---------------------------------------------------------------- config ----

def parse_size(text):
    """'6MiB', '512KiB', '1GiB', '123' -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*(KiB|MiB|GiB|KB|MB|GB|)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 6MiB)")
    scale = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
             "KB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3}[m.group(2)]
    return int(m.group(1)) * scale


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Soak test for strata serve (see the module docstring).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--strata", default=os.path.join(REPO, "build/release/apps/strata/strata"),
                   help="strata binary")
    p.add_argument("--model", default=os.path.join(REPO, "models/strata-tiny"),
                   help="model directory served by both servers")
    p.add_argument("--duration", type=float, default=60, help="seconds of soak")
    p.add_argument("--max-requests", type=int, default=1_000_000,
                   help="stop after this many client requests (all kinds)")
    p.add_argument("--seed", type=int, default=1, help="seed of every client's and the "
                   "injector's random choices")
    g = p.add_argument_group("clients (threads)")
    g.add_argument("--streamers", type=int, default=4, help="streaming clients")
    g.add_argument("--disconnectors", type=int, default=2, help="clients that leave early")
    g.add_argument("--malformed", type=int, default=2, help="clients sending bad requests")
    g.add_argument("--long-prefix", type=int, default=2,
                   help="clients repeating long prefixes")
    g.add_argument("--probers", type=int, default=2,
                   help="clients checking probes against the references")
    g.add_argument("--pause", type=float, default=0.05,
                   help="seconds a malformed or disconnecting client waits between requests "
                        "(they need no engine time and would otherwise spin)")
    g = p.add_argument_group("server")
    g.add_argument("--kv-cache-memory", default="6MiB",
                   help="KV pool of the soak server (6MiB = 64 blocks: about 3 long prompts)")
    g.add_argument("--host-tier-bytes", type=parse_size, default=4 * MIB,
                   help="host tier capacity (cpu_bytes_to_use)")
    g.add_argument("--quota-mib", type=int, default=16, help="size of the fs tier's filesystem")
    g.add_argument("--fs-max-bytes", type=parse_size, default=None,
                   help="fs tier max_bytes (default: 3/4 of the quota; the whole quota "
                        "where the quota is simulated)")
    g.add_argument("--max-request-body", default="1MiB",
                   help="server --max-request-body (oversized cases send more)")
    g.add_argument("--max-model-len", type=int, default=512,
                   help="server --max-model-len (probes must fit)")
    g.add_argument("--server-threads", type=int, default=1, help="server --threads")
    g = p.add_argument_group("checks")
    g.add_argument("--rss-limit-mib", type=int, default=256,
                   help="peak VmRSS allowed for the soak server (the defaults plateau near "
                        "110 MiB: model, 6 MiB pool, 4 MiB host tier, buffers)")
    g.add_argument("--probe-max-tokens", type=int, default=24,
                   help="greedy tokens per probe (ignore_eos)")
    g.add_argument("--quiet-every", type=float, default=15,
                   help="seconds between quiet rounds: clients pause, the server drains, "
                        "POST /reset_prefix_cache, every probe is checked alone (KV from the "
                        "fs tier)")
    g.add_argument("--allow-framing-close", action="store_true",
                   help="accept a closed connection without an answer for HTTP framing errors "
                        "(bad Content-Length, garbage request line, ...) instead of a 4xx")
    g.add_argument("--skip-case", action="append", default=[], metavar="NAME",
                   help="leave this malformed case out (repeatable; names in the report)")
    g = p.add_argument_group("faults")
    g.add_argument("--fault-interval", type=float, nargs=2, default=(0.5, 2.0),
                   metavar=("MIN", "MAX"), help="seconds between chunk-file faults")
    g.add_argument("--fill-every", type=float, default=20, help="seconds between quota fills")
    g.add_argument("--fill-hold", type=float, default=3, help="seconds a fill is held")
    g = p.add_argument_group("output")
    g.add_argument("--report", help="JSON report path (default: soak-report.json in a temp dir)")
    g.add_argument("--keep-workdir", action="store_true",
                   help="keep the temporary directory after the run (a tmpfs quota and its "
                        "chunk files go with the namespace)")
    g.add_argument("--no-namespace", action="store_true",
                   help="do not use unshare/tmpfs; simulate the quota with max_bytes")
    p.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    cfg = p.parse_args(argv)
    cfg.strata, cfg.model = os.path.abspath(cfg.strata), os.path.abspath(cfg.model)
    return cfg


# --------------------------------------------------------------- helpers ----

class Stop(Exception):
    """Raised in the main thread by SIGTERM/SIGINT."""


def _on_signal(signum, _frame):
    raise Stop(f"signal {signum}")


def _die_with_parent():
    # Runs in the child between fork and exec: the server gets SIGKILL if the
    # driver dies, so no server outlives a killed soak (ctest timeout, kill -9).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def read_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class HttpResult:
    def __init__(self, status, body, headers=None):
        self.status, self.body, self.headers = status, body, headers or {}

    def json(self):
        return json.loads(self.body)


def http_call(port, method, path, body=None, headers=None, timeout=HTTP_TIMEOUT_S):
    """One request on a fresh connection. Connection errors propagate."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        hdrs.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return HttpResult(resp.status, resp.read(), dict(resp.getheaders()))
    finally:
        conn.close()


def raw_exchange(port, data, timeout=10.0):
    """Sends raw bytes, reads until the server closes. Returns (status or None, bytes)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered early (413) and closed; read what it sent
        while True:
            try:
                block = sock.recv(65536)
            except ConnectionResetError:
                break
            if not block:
                break
            out += block
    finally:
        sock.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3})", out)
    return (int(m.group(1)) if m else None), out


def http_body_of(raw):
    """The body of a raw HTTP/1.1 answer (Content-Length framing; enough for errors)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return body


def error_message(body):
    """The OpenAI error envelope's message, or None if the body is not one."""
    try:
        doc = json.loads(body)
        msg = doc["error"]["message"]
        return msg if isinstance(msg, str) and msg.strip() else None
    except (ValueError, KeyError, TypeError):
        return None


def parse_metrics(text):
    """Prometheus text -> {series: value}, model_name/engine labels dropped."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, value = line.rsplit(" ", 1)
        name = re.sub(r'model_name="[^"]*",?', "", name)
        name = re.sub(r'engine="[^"]*",?', "", name).replace(",}", "}").replace("{}", "")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out


# ---------------------------------------------------------- quota / dirs ----

class Workspace:
    """Temporary directory; the fs tier's root is a tmpfs mount in it (or a plain dir)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.dir = cfg.workdir or tempfile.mkdtemp(prefix="strata-soak-")
        self.fs_root = os.path.join(self.dir, "fs-tier")
        os.makedirs(self.fs_root, exist_ok=True)
        self.mounted = False
        self.quota_mode = "max_bytes (simulated)"
        self.quota_note = ""
        if cfg.in_namespace:
            self._mount_tmpfs()
        else:
            self.quota_note = ("--no-namespace given" if cfg.no_namespace
                               else "unshare -rm is not available")
        quota = cfg.quota_mib * MIB
        if cfg.fs_max_bytes is not None:
            self.fs_max_bytes = cfg.fs_max_bytes
        else:
            self.fs_max_bytes = quota * 3 // 4 if self.mounted else quota

    def _mount_tmpfs(self):
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.cfg.quota_mib}m,mode=0700",
                            "tmpfs", self.fs_root], capture_output=True, text=True)
        if r.returncode != 0:
            self.quota_note = "mount -t tmpfs failed in the namespace: " + r.stderr.strip()
            return
        st = os.statvfs(self.fs_root)
        size = st.f_blocks * st.f_frsize
        if abs(size - self.cfg.quota_mib * MIB) > MIB:
            self.quota_note = f"tmpfs has {size} bytes, asked for {self.cfg.quota_mib} MiB"
        self.mounted = True
        self.quota_mode = "tmpfs"

    def is_inside_root(self, path):
        root = os.path.realpath(self.fs_root)
        return os.path.realpath(path).startswith(root + os.sep)

    def cleanup(self, keep):
        if self.mounted:
            subprocess.run(["umount", "-l", self.fs_root], capture_output=True)
            self.mounted = False
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def tier_config(ws, cfg):
    fs = {"type": "fs", "root_dir": ws.fs_root, "n_read_threads": 2, "n_write_threads": 2,
          "max_bytes": ws.fs_max_bytes}
    return json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {
                           "spec_name": "TieringOffloadingSpec",
                           "cpu_bytes_to_use": cfg.host_tier_bytes, "eviction_policy": "lru",
                           "secondary_tiers": [fs]}})


# ---------------------------------------------------------------- server ----

class ServerProcess:
    """`strata serve` on a free loopback port; stderr kept in a ring buffer.

    Every instance is kept in `live`, so main() can kill whatever a failure
    left running."""

    live = []

    def __init__(self, cfg, name, *extra):
        self.name = name
        self.cmd = [cfg.strata, "serve", cfg.model, "--host", "127.0.0.1", "--port", "0",
                    "--max-model-len", str(cfg.max_model_len),
                    "--threads", str(cfg.server_threads), "--disable-log-stats", *extra]
        self.log = collections.deque(maxlen=4000)
        self.num_warnings = 0
        self.num_errors = 0
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, errors="replace", preexec_fn=_die_with_parent)
        ServerProcess.live.append(self)
        self.port = self._wait_for_port(60)
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _wait_for_port(self, timeout_s):
        # A server that hangs silently is killed, which ends the readline().
        timer = threading.Timer(timeout_s, self.kill)
        timer.start()
        try:
            for line in iter(self.proc.stderr.readline, ""):
                self.log.append(line)
                m = re.search(r"serving .* on http://127\.0\.0\.1:(\d+)", line)
                if m:
                    return int(m.group(1))
        finally:
            timer.cancel()
        raise RuntimeError(f"{self.name} server exited or hung (limit {timeout_s} s) at "
                           "startup:\n" + self.log_tail())

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)
            if line.startswith("[strata W"):
                self.num_warnings += 1
            elif line.startswith("[strata E"):
                self.num_errors += 1

    @property
    def pid(self):
        return self.proc.pid

    def is_alive(self):
        return self.proc.poll() is None

    def log_tail(self, num_lines=60):
        """The last lines of stderr, without the routine "client disconnected" lines."""
        lines = [l for l in list(self.log) if "client disconnected; aborted" not in l]
        return "".join(lines[-num_lines:])

    def startup_line(self, pattern):
        for line in list(self.log)[:50]:
            if re.search(pattern, line):
                return line.strip()
        return ""

    def metrics(self):
        return parse_metrics(http_call(self.port, "GET", "/metrics", timeout=30).body.decode())

    def stop(self, timeout_s=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# --------------------------------------------------------------- prompts ----

WORDS = ("the whale ship sea captain said it was a truth universally acknowledged that a "
         "single man in possession of a good fortune must be in want of a wife and the lord "
         "spoke unto the people of the land river mountain garden letter morning winter "
         "quiet house window child story light dark road city old new friend water fire "
         "stone bread music north south small great long short").split()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def long_text(seed, n):
    r = random.Random(seed)
    return words(r, n)


class Probe:
    """A well-formed greedy request whose answer is known from the reference server."""

    def __init__(self, name, endpoint, body):
        self.name, self.endpoint, self.body = name, endpoint, body
        self.text = None
        self.prompt_tokens = None


def make_probes(cfg):
    """Completion probes sharing one long prefix, chat probes sharing a long system prompt."""
    common = {"temperature": 0, "max_tokens": cfg.probe_max_tokens, "ignore_eos": True}
    prefix = long_text(101, 230)
    system = long_text(202, 200)
    probes = []
    for i, tail in enumerate(["and then the captain", "so the child wrote a letter",
                              "in the morning light", "the old friend said", "water and fire"]):
        probes.append(Probe(f"completion-{i}", "/v1/completions",
                            {"prompt": prefix + " " + tail, **common}))
    probes.append(Probe("completion-short", "/v1/completions",
                        {"prompt": "the quiet house by the river", **common}))
    for i, question in enumerate(["tell me about the sea", "who is the captain",
                                  "write a short story about winter"]):
        probes.append(Probe(f"chat-{i}", "/v1/chat/completions",
                            {"messages": [{"role": "system", "content": system},
                                          {"role": "user", "content": question}], **common}))
    probes.append(Probe("chat-short", "/v1/chat/completions",
                        {"messages": [{"role": "user", "content": "hello there"}], **common}))
    return probes


def answer_text(endpoint, doc):
    choice = doc["choices"][0]
    return choice["text"] if endpoint == "/v1/completions" else choice["message"]["content"]


def delta_text(endpoint, event):
    if not event.get("choices"):
        return ""  # usage-only chunk
    choice = event["choices"][0]
    if endpoint == "/v1/completions":
        return choice.get("text") or ""
    return (choice.get("delta") or {}).get("content") or ""


def compute_references(cfg, probes):
    """Pure-recompute answers (no tiers, default KV memory) for every probe."""
    ref = ServerProcess(cfg, "reference")
    try:
        for probe in probes:
            r = http_call(ref.port, "POST", probe.endpoint, probe.body)
            if r.status != 200:
                raise RuntimeError(f"reference server answered {r.status} to probe "
                                   f"{probe.name}: {r.body[:300]!r}")
            doc = r.json()
            probe.text = answer_text(probe.endpoint, doc)
            probe.prompt_tokens = doc["usage"]["prompt_tokens"]
            if probe.prompt_tokens + cfg.probe_max_tokens > cfg.max_model_len:
                raise RuntimeError(f"probe {probe.name} has {probe.prompt_tokens} tokens; "
                                   f"too long for --max-model-len {cfg.max_model_len}")
    finally:
        ref.stop()
    return probes


# ----------------------------------------------------------------- stats ----

class Stats:
    """Counters shared by every thread (one lock). Keys are plain strings."""

    MAX_EXAMPLES = 5

    def __init__(self, max_requests):
        self.lock = threading.Lock()
        self.max_requests = max_requests
        self.num_requests = 0
        self.requests = collections.Counter()      # "kind outcome"
        self.faults = collections.Counter()        # fault kind
        self.errors = collections.Counter()        # "kind status/reason" (failures only)
        self.malformed = collections.Counter()     # "case status"
        self.examples = collections.defaultdict(list)
        self.wrong_outputs = []
        self.num_wrong = 0
        self.num_probe_checks = 0
        self.num_probe_checks_cached = 0
        self.rss_samples = 0
        self.rss_peak_kib = 0
        self.rss_first_kib = None
        self.rss_last_kib = None
        self.rss_series = []  # [seconds into the soak, MiB], every 30 s
        self.health_failures = 0

    def take_request(self):
        """Reserves one request of the --max-requests budget; False once spent."""
        with self.lock:
            if self.num_requests >= self.max_requests:
                return False
            self.num_requests += 1
            return True

    def count(self, kind, outcome):
        with self.lock:
            self.requests[f"{kind} {outcome}"] += 1

    def fault(self, kind, n=1):
        with self.lock:
            self.faults[kind] += n

    def fail(self, kind, reason, detail):
        with self.lock:
            self.requests[f"{kind} FAILED"] += 1
            self.errors[f"{kind} {reason}"] += 1
            ex = self.examples[f"{kind} {reason}"]
            if len(ex) < self.MAX_EXAMPLES:
                ex.append(str(detail)[:1500])

    def wrong(self, probe, mode, got):
        with self.lock:
            self.num_wrong += 1
            if len(self.wrong_outputs) < 10:
                self.wrong_outputs.append({"probe": probe.name, "mode": mode,
                                           "expected": probe.text, "got": got})

    def probe_checked(self, cached_tokens):
        with self.lock:
            self.num_probe_checks += 1
            if cached_tokens:
                self.num_probe_checks_cached += 1

    def rss(self, kib):
        with self.lock:
            self.rss_samples += 1
            self.rss_peak_kib = max(self.rss_peak_kib, kib)
            if self.rss_first_kib is None:
                self.rss_first_kib = kib
            self.rss_last_kib = kib


# ------------------------------------------------------------ the soak ----

class Soak:
    """What every worker shares: config, server, stats, stop flag, probes."""

    def __init__(self, cfg, ws, server, probes):
        self.cfg, self.ws, self.server, self.probes = cfg, ws, server, probes
        self.stats = Stats(cfg.max_requests)
        self.stop = threading.Event()
        self.stop_reason = ""
        self.max_request_body = parse_size(cfg.max_request_body)
        self.started = time.time()
        # The gate: clients start a request only while it is open; a quiet
        # round closes it and waits until no client is inside a request.
        self.gate = threading.Condition()
        self.is_open = True
        self.num_busy = 0

    @property
    def port(self):
        return self.server.port

    def halt(self, reason):
        if not self.stop.is_set():
            self.stop_reason = reason
            self.stop.set()
        with self.gate:
            self.gate.notify_all()

    def enter(self):
        """Blocks while the gate is closed; False once the soak stops."""
        with self.gate:
            while not self.is_open and not self.stop.is_set():
                self.gate.wait(0.5)
            if self.stop.is_set():
                return False
            self.num_busy += 1
            return True

    def leave(self):
        with self.gate:
            self.num_busy -= 1
            self.gate.notify_all()

    def close_gate(self, timeout_s):
        """Closes the gate and waits for every client to finish its request."""
        with self.gate:
            self.is_open = False
            return self.gate.wait_for(lambda: self.num_busy == 0 or self.stop.is_set(),
                                      timeout_s)

    def open_gate(self):
        with self.gate:
            self.is_open = True
            self.gate.notify_all()


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


def read_sse(resp, endpoint):
    """Reads an SSE body to [DONE]. Returns (text of choice 0, events, problem or None)."""
    text, num_events = [], 0
    while True:
        line = resp.readline()
        if not line:
            return "".join(text), num_events, "stream ended without data: [DONE]"
        line = line.rstrip(b"\r\n")
        if not line:
            continue
        if not line.startswith(b"data: "):
            return "".join(text), num_events, f"not an SSE data line: {line[:200]!r}"
        payload = line[6:]
        if payload == b"[DONE]":
            return "".join(text), num_events, None
        try:
            event = json.loads(payload)
        except ValueError:
            return "".join(text), num_events, f"SSE event is not JSON: {payload[:200]!r}"
        if "error" in event:
            return "".join(text), num_events, f"error event in stream: {payload[:300]!r}"
        num_events += 1
        text.append(delta_text(endpoint, event))


def stream_request(soak, endpoint, body):
    """POSTs a streaming request. Returns (text, events, problem); problem None = ok."""
    conn = http.client.HTTPConnection("127.0.0.1", soak.port, timeout=HTTP_TIMEOUT_S)
    try:
        conn.request("POST", endpoint, body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            return "", 0, f"status {resp.status}: {resp.read()[:300]!r}"
        ctype = resp.getheader("Content-Type", "")
        if "text/event-stream" not in ctype:
            return "", 0, f"content-type {ctype!r}"
        return read_sse(resp, endpoint)
    finally:
        conn.close()


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


# ------------------------------------------------------------- malformed ----

def _req(path, body, method="POST", extra_headers=""):
    """Raw bytes of one request with a correct Content-Length."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    elif isinstance(body, str):
        body = body.encode()
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\n{extra_headers}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


C, CHAT = "/v1/completions", "/v1/chat/completions"
U64_MAX = "18446744073709551615"


def _ok_chat(**kw):
    return {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, **kw}


def malformed_catalogue(max_body_bytes, max_model_len):
    """[(name, raw request bytes, is_framing)]: every one must get a 4xx with a message."""
    cat = [
        ("invalid_json", _req(C, '{"prompt": "hi",'), False),
        ("truncated_json", _req(C, '{"prompt": "hel'), False),
        ("not_an_object", _req(C, "[1, 2, 3]"), False),
        ("empty_body", _req(C, ""), False),
        ("nan_literal", _req(C, '{"prompt": "hi", "temperature": NaN}'), False),
        ("number_overflow", _req(C, '{"prompt": "hi", "temperature": 1e400}'), False),
        ("deep_nesting", _req(C, '{"prompt": ' + "[" * 50000 + "]" * 50000 + "}"), False),
        ("non_utf8", _req(C, b'{"prompt": "\xff\xfe\xfd"}'), False),
        ("utf8_bom", _req(C, b'\xef\xbb\xbf{"prompt": "hi"}'), False),
        ("prompt_missing", _req(C, {"max_tokens": 4}), False),
        ("prompt_wrong_type", _req(C, {"prompt": 123}), False),
        ("prompt_empty_list", _req(C, {"prompt": []}), False),
        ("prompt_token_oov", _req(C, {"prompt": [1, 99999]}), False),
        ("prompt_token_negative", _req(C, {"prompt": [-1, 5]}), False),
        ("prompt_too_long", _req(C, {"prompt": long_text(7, max_model_len * 2)}), False),
        ("prompt_ids_too_long", _req(C, {"prompt": [5] * (max_model_len + 10)}), False),
        ("max_tokens_string", _req(C, {"prompt": "hi", "max_tokens": "ten"}), False),
        ("max_tokens_float", _req(C, '{"prompt": "hi", "max_tokens": 2.5}'), False),
        ("max_tokens_negative", _req(C, {"prompt": "hi", "max_tokens": -1}), False),
        ("max_tokens_zero", _req(C, {"prompt": "hi", "max_tokens": 0}), False),
        ("max_tokens_over_context", _req(C, {"prompt": "hi", "max_tokens": 10 ** 9}), False),
        ("max_tokens_u64", _req(C, '{"prompt": "hi", "max_tokens": ' + U64_MAX + "}"), False),
        ("n_u64", _req(C, '{"prompt": "hi", "n": ' + U64_MAX + "}"), False),
        ("n_1000", _req(C, {"prompt": "hi", "n": 1000}), False),
        ("n_zero", _req(C, {"prompt": "hi", "n": 0}), False),
        ("temperature_string", _req(C, {"prompt": "hi", "temperature": "hot"}), False),
        ("temperature_negative", _req(C, {"prompt": "hi", "temperature": -1}), False),
        ("top_p_zero", _req(C, {"prompt": "hi", "top_p": 0}), False),
        ("top_k_negative", _req(C, {"prompt": "hi", "top_k": -5}), False),
        ("logprobs_100", _req(C, {"prompt": "hi", "logprobs": 100}), False),
        ("prompt_logprobs_100", _req(C, {"prompt": "hi", "prompt_logprobs": 100}), False),
        ("stop_65_strings", _req(C, {"prompt": "hi", "stop": [f"s{i}" for i in range(65)]}),
         False),
        ("stop_string_4097", _req(C, {"prompt": "hi", "stop": ["x" * 4097]}), False),
        ("stop_wrong_type", _req(C, {"prompt": "hi", "stop": 5}), False),
        ("stop_token_ids_1025", _req(C, {"prompt": "hi", "stop_token_ids": [3] * 1025}), False),
        ("stop_token_id_oov", _req(C, {"prompt": "hi", "stop_token_ids": [999999]}), False),
        ("logit_bias_4097", _req(C, {"prompt": "hi",
                                     "logit_bias": {str(i): 1 for i in range(4097)}}), False),
        ("logit_bias_bad_key", _req(C, {"prompt": "hi", "logit_bias": {"abc": 1}}), False),
        ("logit_bias_oov", _req(C, {"prompt": "hi", "logit_bias": {"999999": 1}}), False),
        ("min_tokens_over_max", _req(C, {"prompt": "hi", "max_tokens": 2, "min_tokens": 5}),
         False),
        ("stream_options_no_stream", _req(C, {"prompt": "hi",
                                              "stream_options": {"include_usage": True}}), False),
        ("prompt_logprobs_stream", _req(C, {"prompt": "hi", "stream": True,
                                            "prompt_logprobs": 1}), False),
        ("best_of_2", _req(C, {"prompt": "hi", "best_of": 2}), False),
        ("beam_search", _req(C, {"prompt": "hi", "use_beam_search": True}), False),
        ("response_format_schema", _req(C, {"prompt": "hi",
                                            "response_format": {"type": "json_schema"}}), False),
        ("suffix", _req(C, {"prompt": "hi", "suffix": "x"}), False),
        ("remote_port_70000", _req(C, {"prompt": "hi",
                                       "kv_transfer_params": {"remote_port": 70000}}), False),
        ("unknown_model", _req(C, {"prompt": "hi", "model": "no-such-model"}), False),
        ("chat_messages_missing", _req(CHAT, {"max_tokens": 4}), False),
        ("chat_messages_not_list", _req(CHAT, {"messages": "hi"}), False),
        ("chat_role_missing", _req(CHAT, {"messages": [{"content": "hi"}]}), False),
        ("chat_role_wrong_type", _req(CHAT, {"messages": [{"role": 5, "content": "hi"}]}), False),
        ("chat_image_part", _req(CHAT, {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}), False),
        ("chat_top_logprobs_100", _req(CHAT, _ok_chat(logprobs=True, top_logprobs=100)), False),
        ("chat_top_logprobs_no_logprobs", _req(CHAT, _ok_chat(top_logprobs=2)), False),
        ("chat_both_generation_flags", _req(CHAT, _ok_chat(continue_final_message=True)), False),
        ("chat_tools_not_list", _req(CHAT, _ok_chat(tools="x")), False),
        ("chat_max_tokens_u64", _req(CHAT, '{"messages": [{"role": "user", "content": "hi"}], '
                                     '"max_tokens": ' + U64_MAX + "}"), False),
        ("unknown_path", _req("/v1/no-such-endpoint", {"prompt": "hi"}), False),
        ("non_utf8_path",
         b"GET /v1/\xff\xfe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", False),
        ("wrong_method", _req(C, "", method="GET"), False),
        ("oversized_declared",
         (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
          f"Content-Length: {max_body_bytes + 1}\r\n\r\n").encode(), False),
        ("oversized_body", _req(C, {"prompt": "x" * (max_body_bytes + 16)}), False),
        ("oversized_chunked", _chunked(C, b'{"prompt": "' + b"y" * (max_body_bytes + 16) + b'"}'),
         False),
        # HTTP framing: the request cannot be parsed as HTTP at all.
        ("bad_content_length", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Content-Length: abc\r\n\r\n{}").encode(), True),
        ("negative_content_length", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                     "Content-Length: -5\r\n\r\n{}").encode(), True),
        ("conflicting_content_length", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                        "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}")
         .encode(), True),
        ("bad_chunk_size", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n").encode(),
         True),
        ("garbage_request_line", b"\x00\x01\x02 NOT HTTP AT ALL\r\n\r\n", True),
        ("bad_http_version", f"POST {C} HTTP/9.9\r\nHost: x\r\n\r\n".encode(), True),
        ("header_over_64k", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + "a" * 70000 +
                             "\r\nContent-Length: 2\r\n\r\n{}").encode(), True),
    ]
    return cat


def _chunked(path, body):
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    parts = [body[i:i + 65536] for i in range(0, len(body), 65536)]
    return head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


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


# ------------------------------------------------------ long prefix / probe ----

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


def check_probe(soak, kind, probe, stream, fail):
    """Sends one probe and compares its text with the reference, exactly.

    fail(reason, detail) is called for a transport or status failure; a
    different text is a wrong output."""
    body = dict(probe.body, stream=stream)
    cached = 0
    try:
        if stream:
            text, _, problem = stream_request(soak, probe.endpoint, body)
            if problem:
                return fail(problem.split(":")[0], problem)
        else:
            r = http_call(soak.port, "POST", probe.endpoint, body)
            if r.status != 200:
                return fail(f"status_{r.status}", r.body[:400])
            doc = r.json()
            text = answer_text(probe.endpoint, doc)
            usage = doc["usage"]
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            if usage["prompt_tokens"] != probe.prompt_tokens:
                fail("prompt_tokens_differ", f"{probe.name}: {usage['prompt_tokens']} vs "
                                             f"reference {probe.prompt_tokens}")
    except (OSError, http.client.HTTPException) as e:
        return fail("connection_error", repr(e))
    mode = "stream" if stream else "plain"
    if text != probe.text:
        soak.stats.wrong(probe, f"{kind} {mode}", text)
        return soak.stats.count(kind, f"{mode} WRONG")
    soak.stats.probe_checked(cached)
    soak.stats.count(kind, f"{mode} {'match_cached' if cached else 'match'}")


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


class QuietRounds(threading.Thread):
    """Every --quiet-every s: pause the clients, let the engine drain (no request
    may stay behind), POST /reset_prefix_cache (pool and host tier dropped; it
    must succeed on an idle server), then check every probe alone, so its
    prefix comes back from the fs tier (or is recomputed where the injector
    damaged it)."""

    kind = "quiet_probe"

    def __init__(self, soak):
        super().__init__(name="quiet-rounds", daemon=True)
        self.soak, self.stats = soak, soak.stats
        self.rounds = []

    def run(self):
        cfg = self.soak.cfg
        next_round = time.time() + min(cfg.quiet_every, max(5.0, cfg.duration / 3))
        try:
            while not self.soak.stop.wait(0.5):
                if time.time() >= next_round:
                    self.one_round()
                    next_round = time.time() + cfg.quiet_every
        except Exception:
            self.stats.fail("quiet_round", "driver_exception", traceback.format_exc())
        finally:
            self.soak.open_gate()

    def fail(self, reason, detail):
        if not self.soak.stop.is_set() or self.soak.server.is_alive():
            self.stats.fail(self.kind, reason, detail)

    def one_round(self):
        soak = self.soak
        started = time.time()
        try:
            if not soak.close_gate(HTTP_TIMEOUT_S + 10):
                return self.fail("clients_did_not_finish", "a client request outlived "
                                 f"{HTTP_TIMEOUT_S + 10} s")
            if soak.stop.is_set():
                return
            problem = wait_for_drain(soak, 30)
            if problem:
                return self.fail("engine_not_idle", problem)
            if not self.reset():
                return
            before = soak.server.metrics()
            for probe in soak.probes:
                soak.stats.take_request()
                check_probe(soak, self.kind, probe, False, self.fail)
            after = soak.server.metrics()
        finally:
            soak.open_gate()

        def delta(key):
            return after.get(key, 0) - before.get(key, 0)
        self.rounds.append({
            "at_s": round(started - soak.started, 1), "took_s": round(time.time() - started, 1),
            "probes": len(soak.probes),
            "external_tokens": delta(
                'vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}'),
            "fs_hit_tokens": delta('strata:kv_tier_hit_tokens_total{tier="fs"}'),
            "fs_load_failures": delta(
                'vllm:kv_offload_tiering_promotion_job_failures_total{tier="fs"}')})

    def reset(self):
        """POST /reset_prefix_cache on the idle server; a refusal now is a failure."""
        for _ in range(10):
            try:
                r = http_call(self.soak.port, "POST", "/reset_prefix_cache", b"", timeout=30)
            except (OSError, http.client.HTTPException) as e:
                self.fail("reset_connection_error", repr(e))
                return False
            if r.status == 200:
                self.stats.count("reset_prefix_cache", "done_quiet")
                return True
            time.sleep(0.5)
        self.fail("reset_refused_while_idle", f"status {r.status}: {r.body[:300]!r}")
        return False


# ------------------------------------------------------------ fault injector ----

class FaultInjector(threading.Thread):
    """Damages chunk files under the fs tier root; fills the quota now and then."""

    KINDS = ("flip_payload", "flip_header", "truncate", "delete", "delete_shard_dir")
    WEIGHTS = (30, 20, 20, 25, 5)

    def __init__(self, soak):
        super().__init__(name="fault-injector", daemon=True)
        self.soak, self.ws, self.stats = soak, soak.ws, soak.stats
        self.rng = random.Random(soak.cfg.seed * 31337)
        self.filler = os.path.join(self.ws.fs_root, ".soak-filler")
        self.fill_bytes_max = 0

    def run(self):
        cfg = self.soak.cfg
        next_fill = time.time() + min(cfg.fill_every, max(5.0, cfg.duration / 4))
        try:
            while not self.soak.stop.wait(self.rng.uniform(*cfg.fault_interval)):
                self.damage_one()
                if time.time() >= next_fill:
                    self.fill_quota()
                    next_fill = time.time() + cfg.fill_every
        except Exception:
            self.stats.fail("fault_injector", "driver_exception", traceback.format_exc())
        finally:
            self._remove_filler()

    def chunk_files(self):
        out = []
        for d, _, files in os.walk(self.ws.fs_root):
            out.extend(os.path.join(d, f) for f in files if f.endswith(".kv"))
        return out

    def damage_one(self):
        files = self.chunk_files()
        if not files:
            return self.stats.fault("skipped_no_chunk_file")
        kind = self.rng.choices(self.KINDS, self.WEIGHTS)[0]
        path = self.rng.choice(files)
        if not self.ws.is_inside_root(path):  # never touch anything else
            raise RuntimeError(f"refusing to damage {path}: outside {self.ws.fs_root}")
        try:
            getattr(self, kind)(path)
            self.stats.fault(kind)
        except FileNotFoundError:
            self.stats.fault("raced_file_gone")

    def _xor_bytes(self, path, lo, hi, n):
        with open(path, "r+b") as f:
            for _ in range(n):
                off = self.rng.randrange(lo, hi)
                f.seek(off)
                b = f.read(1)
                f.seek(off)
                f.write(bytes([b[0] ^ self.rng.randint(1, 255)]))

    def flip_payload(self, path):
        size = os.path.getsize(path)
        if size <= CHUNK_HEADER_BYTES:
            return self.truncate(path)
        self._xor_bytes(path, CHUNK_HEADER_BYTES, size, self.rng.randint(1, 8))

    def flip_header(self, path):
        self._xor_bytes(path, 0, min(CHUNK_HEADER_BYTES, os.path.getsize(path) or 1), 1)

    def truncate(self, path):
        size = os.path.getsize(path)
        os.truncate(path, self.rng.randrange(0, max(size, 1)))

    def delete(self, path):
        os.unlink(path)

    def delete_shard_dir(self, path):
        shard = os.path.dirname(os.path.dirname(path))  # <ns>/<abc>
        if not self.ws.is_inside_root(shard) or os.path.dirname(shard) == self.ws.fs_root:
            return self.delete(path)
        shutil.rmtree(shard)

    def fill_quota(self):
        """Writes a filler file until ENOSPC, holds it, removes it (tmpfs quota only)."""
        if not self.ws.mounted:
            return self.stats.fault("quota_fill_skipped_no_tmpfs")
        written, hit_enospc = 0, False
        block = b"\0" * MIB
        try:
            with open(self.filler, "wb") as f:
                while written < (self.soak.cfg.quota_mib + 1) * MIB:
                    f.write(block)
                    f.flush()
                    written += len(block)
        except OSError as e:
            if e.errno != 28:  # ENOSPC
                raise
            hit_enospc = True
        self.stats.fault("quota_fill_to_enospc" if hit_enospc else "quota_fill_no_enospc")
        self.fill_bytes_max = max(self.fill_bytes_max, written)
        self.soak.stop.wait(self.soak.cfg.fill_hold)
        self._remove_filler()

    def _remove_filler(self):
        try:
            os.unlink(self.filler)
        except FileNotFoundError:
            pass


# ------------------------------------------------------------------ monitor ----

class Monitor(threading.Thread):
    """Process alive and VmRSS every 0.5 s; GET /health every second."""

    def __init__(self, soak):
        super().__init__(name="monitor", daemon=True)
        self.soak, self.stats = soak, soak.stats

    def run(self):
        tick = 0
        while not self.soak.stop.wait(0.5):
            server = self.soak.server
            if not server.is_alive():
                self.stats.fail("server", "exited", f"exit code {server.proc.returncode}")
                return self.soak.halt(f"server exited with code {server.proc.returncode}")
            kib = read_rss_kib(server.pid)
            if kib is not None:
                self.stats.rss(kib)
                if kib > self.soak.cfg.rss_limit_mib * 1024:
                    self.stats.fail("server", "rss_over_limit", f"VmRSS {kib} KiB")
            tick += 1
            if tick % 2 == 0:
                self.check_health()

    def check_health(self):
        try:
            r = http_call(self.soak.port, "GET", "/health", timeout=10)
            if r.status == 200:
                return
            detail = f"status {r.status}"
        except (OSError, http.client.HTTPException) as e:
            detail = repr(e)
        with self.stats.lock:
            self.stats.health_failures += 1
        self.stats.fail("health", "not_200", detail)


# ------------------------------------------------------------------- report ----

TIER_METRICS = (
    "vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
    "vllm:kv_offload_store_bytes_total", "vllm:kv_offload_load_bytes_total",
    "strata:kv_offload_load_wait_timeouts_total", "vllm:num_preemptions_total",
    "vllm:request_success_total",
)
TIER_METRIC_PATTERNS = (r"prompt_tokens_by_source_total", r"kv_tier_", r"kv_offload_tiering_",
                        r"request_success_total")


def tier_metrics(metrics):
    return {k: v for k, v in sorted(metrics.items())
            if k in TIER_METRICS or any(re.search(p, k) for p in TIER_METRIC_PATTERNS)}


def wait_for_drain(soak, timeout_s=60):
    """After the clients stop, no request may stay running or waiting (leaks)."""
    deadline = time.time() + timeout_s
    last = {}
    while time.time() < deadline:
        try:
            m = soak.server.metrics()
        except (OSError, http.client.HTTPException):
            time.sleep(0.5)
            continue
        last = {k: v for k, v in m.items()
                if k.startswith("vllm:num_requests_running") or
                k.startswith("vllm:num_requests_waiting")}
        if last and all(v == 0 for v in last.values()):
            return None
        time.sleep(0.5)
    return f"requests still in the engine {timeout_s} s after the clients stopped: {last}"


def verdict(soak, report):
    s, cfg = soak.stats, soak.cfg
    reasons = []
    if report["server"]["crashed"]:
        reasons.append(f"server exited during the soak (code {report['server']['exit_code']})")
    if report["server"]["restarts"]:
        reasons.append("server restarted")
    if s.rss_peak_kib > cfg.rss_limit_mib * 1024:
        reasons.append(f"peak RSS {s.rss_peak_kib // 1024} MiB over the "
                       f"{cfg.rss_limit_mib} MiB bound")
    if s.num_wrong:
        reasons.append(f"{s.num_wrong} wrong outputs")
    if s.errors:
        reasons.append(f"{sum(s.errors.values())} failed checks: " +
                       ", ".join(f"{k} x{v}" for k, v in sorted(s.errors.items())))
    if report.get("drain_problem"):
        reasons.append(report["drain_problem"])
    if report.get("interrupted"):
        reasons.append("interrupted: " + report["interrupted"])
    if s.num_probe_checks == 0:
        reasons.append("no probe was checked (soak too short?)")
    damage = sum(v for k, v in s.faults.items() if k in FaultInjector.KINDS)
    if damage == 0:
        reasons.append("the fault injector damaged no chunk file (soak too short?)")
    if s.rss_samples == 0:
        reasons.append("no RSS sample")
    return reasons


def quiet_round_totals(rounds):
    keys = ("probes", "external_tokens", "fs_hit_tokens", "fs_load_failures")
    return {"rounds": len(rounds), **{k: sum(r[k] for r in rounds) for k in keys}}


def build_report(soak, ws, injector, started, ended, extra):
    s, cfg = soak.stats, soak.cfg
    server = soak.server
    kinds, statuses = collections.Counter(), collections.Counter()
    for key, n in s.requests.items():
        kinds[key.split(" ")[0]] += n
    for key, n in s.malformed.items():
        statuses[key.rsplit(" ", 1)[1]] += n
    report = {
        "duration_s": round(ended - started, 1),
        "stop_reason": soak.stop_reason,
        "config": {k: v for k, v in vars(cfg).items() if k not in ("in_namespace", "workdir")},
        "quota": {"mode": ws.quota_mode, "note": ws.quota_note, "quota_mib": cfg.quota_mib,
                  "fs_max_bytes": ws.fs_max_bytes,
                  "filler_bytes_max": injector.fill_bytes_max if injector else 0},
        "server": {"command": server.cmd, "pid": server.pid, "crashed": False, "restarts": 0,
                   "exit_code": None, "log_warnings": server.num_warnings,
                   "log_errors": server.num_errors,
                   "kv_cache_line": server.startup_line(r"KV cache:")},
        "requests_total": s.num_requests,
        "requests_by_kind": dict(sorted(kinds.items())),
        "requests_by_kind_outcome": dict(sorted(s.requests.items())),
        "faults": dict(sorted(s.faults.items())),
        "faults_injected": sum(v for k, v in s.faults.items()
                               if not k.startswith(("skipped", "raced", "quota_fill_skipped"))),
        "errors": dict(sorted(s.errors.items())),
        "error_examples": {k: v for k, v in sorted(s.examples.items())},
        "malformed_by_case_status": dict(sorted(s.malformed.items())),
        "malformed_by_status": dict(sorted(statuses.items())),
        "probes": {"checked": s.num_probe_checks, "checked_with_cached_prefix":
                   s.num_probe_checks_cached, "wrong_outputs": s.num_wrong,
                   "wrong_examples": s.wrong_outputs,
                   "references": {p.name: {"prompt_tokens": p.prompt_tokens, "text": p.text}
                                  for p in soak.probes}},
        "rss": {"peak_mib": round(s.rss_peak_kib / 1024, 1), "bound_mib": cfg.rss_limit_mib,
                "first_mib": round((s.rss_first_kib or 0) / 1024, 1),
                "last_mib": round((s.rss_last_kib or 0) / 1024, 1), "samples": s.rss_samples,
                "every_30s_mib": s.rss_series},
        "health_failures": s.health_failures,
    }
    report.update(extra)
    report["quiet_round_totals"] = quiet_round_totals(report.get("quiet_rounds", []))
    return report


def print_summary(report, reasons):
    r = report
    q = r["quiet_round_totals"]
    out = [f"== strata soak: {'PASS' if not reasons else 'FAIL'} ==",
           f"duration {r['duration_s']} s ({r['stop_reason']}); quota: {r['quota']['mode']}"
           + (f" ({r['quota']['note']})" if r['quota']['note'] else ""),
           f"requests: {r['requests_total']}  " +
           "  ".join(f"{k}={v}" for k, v in r["requests_by_kind"].items()),
           f"faults injected: {r['faults_injected']}  " +
           "  ".join(f"{k}={v}" for k, v in r["faults"].items()),
           "malformed answers by status: " +
           "  ".join(f"{k}={v}" for k, v in r["malformed_by_status"].items()),
           f"errors: {sum(r['errors'].values())}  " +
           "  ".join(f"{k}={v}" for k, v in r["errors"].items()),
           f"probes checked: {r['probes']['checked']} "
           f"({r['probes']['checked_with_cached_prefix']} with a cached prefix); "
           f"wrong outputs: {r['probes']['wrong_outputs']}",
           f"peak RSS: {r['rss']['peak_mib']} MiB (bound {r['rss']['bound_mib']} MiB; "
           f"first {r['rss']['first_mib']}, last {r['rss']['last_mib']})",
           f"quiet rounds: {q['rounds']} ({q['probes']} probes alone after a reset; "
           f"{q['fs_hit_tokens']:g} prompt tokens from the fs tier, "
           f"{q['fs_load_failures']:g} fs loads rejected)",
           f"server restarts: {r['server']['restarts']}; health failures: {r['health_failures']}"]
    tm = r.get("tier_metrics", {})
    for key in ('strata:kv_tier_hit_tokens_total{tier="fs"}',
                'strata:kv_tier_hit_tokens_total{tier="host"}',
                "vllm:external_prefix_cache_hits_total",
                'vllm:kv_offload_tiering_promotion_job_failures_total{tier="fs"}',
                'vllm:kv_offload_tiering_chunk_hits_total{tier="fs"}',
                'vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}',
                'vllm:prompt_tokens_by_source_total{source="local_cache_hit"}',
                'vllm:prompt_tokens_by_source_total{source="local_compute"}'):
        if key in tm:
            out.append(f"  {key} = {tm[key]:g}")
    for reason in reasons:
        out.append("FAIL: " + reason)
    for w in r.get("warnings", []):
        out.append("warning: " + w)
    print("\n".join(out), flush=True)


# -------------------------------------------------------------------- main ----

WORKER_CLASSES = (("streamers", StreamClient), ("disconnectors", DisconnectClient),
                  ("malformed", MalformedClient), ("long_prefix", LongPrefixClient),
                  ("probers", ProbeClient))


def start_soak_server(cfg, ws):
    return ServerProcess(cfg, "soak", "--kv-cache-memory", cfg.kv_cache_memory,
                         "--max-request-body", cfg.max_request_body,
                         "--kv-transfer-config", tier_config(ws, cfg))


def wait_until_done(soak):
    """Main thread: stops the soak at --duration; a progress line every 30 s."""
    st = soak.stats
    deadline = soak.started + soak.cfg.duration
    next_line = soak.started + 30
    while not soak.stop.wait(0.5):
        now = time.time()
        if now >= deadline:
            soak.halt("--duration reached")
        elif now >= next_line:
            next_line += 30
            rss_mib = round((st.rss_last_kib or 0) / 1024, 1)
            st.rss_series.append([round(now - soak.started), rss_mib])
            print(f"soak: {now - soak.started:.0f} s, {st.num_requests} requests, "
                  f"{sum(st.faults.values())} faults, {sum(st.errors.values())} errors, "
                  f"{st.num_wrong} wrong, RSS {rss_mib} MiB", flush=True)


def finish(soak, threads):
    """Joins every thread, checks the drain, reads /metrics, stops the server."""
    for t in threads:
        t.join(timeout=HTTP_TIMEOUT_S + 5)
    server, extra, warnings = soak.server, {}, []
    stuck = [t.name for t in threads if t.is_alive()]
    crashed = not server.is_alive()
    if stuck:
        extra["drain_problem"] = f"threads still waiting on the server: {stuck}"
    elif not crashed:
        extra["drain_problem"] = wait_for_drain(soak)
    if not crashed:
        try:
            metrics = server.metrics()
            extra["tier_metrics"] = tier_metrics(metrics)
            if not metrics.get('strata:kv_tier_hit_tokens_total{tier="fs"}'):
                warnings.append("the fs tier served no tokens")
        except (OSError, http.client.HTTPException) as e:
            warnings.append(f"could not read /metrics: {e!r}")
    exit_code = server.stop() if not crashed else server.proc.returncode
    if exit_code not in (0, None) and not crashed:
        warnings.append(f"server exited with code {exit_code} after SIGTERM")
    extra["warnings"] = warnings
    return crashed, exit_code, extra


def run_soak(cfg, ws):
    probes = compute_references(cfg, make_probes(cfg))
    server = start_soak_server(cfg, ws)
    soak = Soak(cfg, ws, server, probes)
    injector, monitor, quiet = FaultInjector(soak), Monitor(soak), QuietRounds(soak)
    workers = [cls(soak, i) for attr, cls in WORKER_CLASSES for i in range(getattr(cfg, attr))]
    print(f"soak: server pid {server.pid} on 127.0.0.1:{server.port}; "
          f"{server.startup_line(r'KV cache:')}; fs tier on {ws.quota_mode} "
          f"({cfg.quota_mib} MiB, max_bytes {ws.fs_max_bytes}); {len(workers)} clients; "
          f"{cfg.duration:g} s", flush=True)
    soak.started = time.time()
    interrupted = None
    try:
        for t in [monitor, injector, quiet, *workers]:
            t.start()
        wait_until_done(soak)
    except Stop as e:
        interrupted = str(e)
        soak.halt(interrupted)
    ended = time.time()
    crashed, exit_code, extra = finish(soak, [*workers, quiet, injector, monitor])
    if interrupted:
        extra["interrupted"] = interrupted
    extra["quiet_rounds"] = quiet.rounds
    report = build_report(soak, ws, injector, soak.started, ended, extra)
    report["server"]["crashed"] = crashed
    report["server"]["exit_code"] = exit_code
    reasons = verdict(soak, report)
    report["result"] = "PASS" if not reasons else "FAIL"
    report["fail_reasons"] = reasons
    if reasons:
        report["server_log_tail"] = server.log_tail(60)
    return report, reasons


def reexec_in_namespace(argv):
    """Runs this script again inside `unshare -rm` (same PID: unshare execs)."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        return False
    os.execvp("unshare", ["unshare", "-rm", sys.executable, os.path.abspath(__file__),
                          "--in-namespace", *argv])
    return True  # not reached


def main(argv):
    cfg = parse_args(argv)
    if not cfg.in_namespace and not cfg.no_namespace:
        reexec_in_namespace(argv)  # returns only when namespaces are unavailable
    for path, what in ((cfg.strata, "--strata"), (os.path.join(cfg.model, "config.json"),
                                                    "--model")):
        if not os.path.exists(path):
            print(f"soak: {what}: {path} does not exist (build first: scripts/build.sh)",
                  file=sys.stderr)
            return 2
    names = {c[0] for c in malformed_catalogue(1, 1)}
    unknown = [n for n in cfg.skip_case if n not in names]
    if unknown:
        print(f"soak: --skip-case: unknown case(s) {unknown}; known: {sorted(names)}",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    ws = Workspace(cfg)
    if not ws.mounted:
        print(f"soak: WARNING: the disk quota is SIMULATED with max_bytes ({ws.quota_note}); "
              "the quota is never filled to ENOSPC", flush=True)
    try:
        report, reasons = run_soak(cfg, ws)
    except Stop as e:
        print(f"soak: interrupted ({e}); no report", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"soak: {e}", file=sys.stderr)
        return 2
    finally:
        for server in ServerProcess.live:
            server.kill()
        ws.cleanup(cfg.keep_workdir)
    report_path = cfg.report or os.path.join(
        tempfile.mkdtemp(prefix="strata-soak-report-"), "soak-report.json")
    with open(report_path, "w") as f:
        json.dump(report, f, indent=2)
    print_summary(report, reasons)
    if reasons:
        print("---- server stderr (tail) ----\n" + report["server_log_tail"], flush=True)
    print(f"soak: report written to {report_path}", flush=True)
    return 0 if not reasons else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
