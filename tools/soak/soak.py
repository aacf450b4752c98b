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

Files (tools/soak/)
-------------------
  soak.py            this entry point: flags, the re-exec under unshare, the run
                     (start threads, wait, stop) and the exit code
  soak_state.py      Soak (what every thread shares: config, server, gate, stop
                     flag) and Stats (the counters); parse_size
  soak_http.py       http_call, raw_exchange, SSE reading, error envelope,
                     /metrics parsing
  soak_server.py     Workspace (temp dir, tmpfs quota), tier_config,
                     ServerProcess, wait_for_drain, Monitor
  soak_probes.py     prompt words, probes, reference answers, check_probe,
                     QuietRounds
  soak_malformed.py  malformed_catalogue(): the bad requests, as raw bytes
  soak_clients.py    Worker and the client classes
  soak_faults.py     FaultInjector
  soak_report.py     verdict, JSON report, printed summary
"""
import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

# The sibling soak_*.py modules, also where sys.path[0] is not this directory
# (python3 -P, PYTHONSAFEPATH).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak_clients import WORKER_CLASSES  # noqa: E402
from soak_faults import FaultInjector  # noqa: E402
from soak_http import HTTP_TIMEOUT_S  # noqa: E402
from soak_malformed import malformed_catalogue  # noqa: E402
from soak_probes import QuietRounds, compute_references, make_probes  # noqa: E402
from soak_report import build_report, print_summary, tier_metrics, verdict  # noqa: E402
from soak_server import (Monitor, ServerProcess, Workspace, start_soak_server,  # noqa: E402
                         wait_for_drain)
from soak_state import MIB, Soak, parse_size  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


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


class Stop(Exception):
    """Raised in the main thread by SIGTERM/SIGINT."""


def _on_signal(signum, _frame):
    raise Stop(f"signal {signum}")


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
