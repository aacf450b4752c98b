"""What every soak thread shares: the Soak object (config, server, gate, stop
flag) and its Stats counters; also the size helpers the config needs.

Any thread may call Stats and Soak methods: each class guards its state
with its own lock (Stats.lock, the Soak gate's condition)."""
import argparse
import collections
import re
import threading
import time

MIB = 1 << 20


def parse_size(text):
    """'6MiB', '512KiB', '1GiB', '123' -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*(KiB|MiB|GiB|KB|MB|GB|)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 6MiB)")
    scale = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
             "KB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3}[m.group(2)]
    return int(m.group(1)) * scale


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
