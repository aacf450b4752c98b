"""The servers and their surroundings: the temporary directory with the fs
tier's quota (Workspace), the tier config, `strata serve` as a child process
(ServerProcess), the drain check and the Monitor thread (liveness, VmRSS,
GET /health).

The main thread starts and stops servers; ServerProcess's drainer thread
reads its stderr; Monitor and the workers only read its state."""
import collections
import ctypes
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from soak_http import http_call, parse_metrics
from soak_state import MIB


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


def start_soak_server(cfg, ws):
    return ServerProcess(cfg, "soak", "--kv-cache-memory", cfg.kv_cache_memory,
                         "--max-request-body", cfg.max_request_body,
                         "--kv-transfer-config", tier_config(ws, cfg))


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
