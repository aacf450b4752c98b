"""`strata serve` for the end-to-end tests in this directory (standard library only).

Server(strata, model, *args)  starts `strata serve MODEL --host 127.0.0.1 --port 0 ARGS`
    (model None: no MODEL argument, the bundled model)
    and waits for its "serving ... on http://127.0.0.1:PORT" line; .base is that URL.
    Its stderr keeps being read into .log (text_log()), so the pipe never fills.
    post(path, body) -> the JSON answer; metrics() -> {series: value}, with the
    model_name/engine labels dropped; healthy(); stop() (SIGTERM, wait).
free_port(), wait_for(predicate, what), Checks (prints ok/FAIL lines, exits 1 on failure).
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request


class Server:
    def __init__(self, strata, model, *args, name="server", env=None, timeout=60):
        self.name = name
        self.proc = subprocess.Popen(
            [strata, "serve", *([model] if model else []), "--host", "127.0.0.1", "--port", "0",
             *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})})
        self.log = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError(f"{name} exited:\n" + self.text_log())
            self.log.append(line)
            m = re.search(r"serving .* on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.base = f"http://127.0.0.1:{m.group(1)}"
                threading.Thread(target=self._drain, daemon=True).start()
                return
        self.proc.kill()
        self.proc.wait()
        raise RuntimeError(f"{name} did not start")

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def text_log(self):
        return "".join(self.log)

    def post(self, path, body, timeout=120):
        req = urllib.request.Request(self.base + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)

    def metrics(self):
        with urllib.request.urlopen(self.base + "/metrics", timeout=30) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, value = line.rsplit(" ", 1)
            name = re.sub(r'model_name="[^"]*",engine="0",?', "", name).replace("{}", "")
            out[name] = float(value)
        return out

    def healthy(self):
        with urllib.request.urlopen(self.base + "/health", timeout=10) as r:
            return r.status == 200

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, what, timeout=30, interval=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError("timed out waiting for " + what)


class Checks:
    """check(ok, msg) prints a line per check; finish() exits 1 if any failed."""

    def __init__(self):
        self.failures = []

    def check(self, ok, msg):
        print(("ok   " if ok else "FAIL ") + msg, flush=True)
        if not ok:
            self.failures.append(msg)

    def finish(self):
        if self.failures:
            print(f"{len(self.failures)} checks failed")
            sys.exit(1)
        print("all checks passed")
