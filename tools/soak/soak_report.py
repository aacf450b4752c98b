"""The end of a soak: the tier metrics kept, the verdict (reasons to FAIL), the
JSON report and the printed summary. Main thread only, after every other
thread has been joined."""
import collections
import re

from soak_faults import FaultInjector


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


def verdict(soak, report):
    s, cfg = soak.stats, soak.cfg
    reasons = []
    if report["server"]["crashed"]:
        reasons.append(f"server exited during the soak (code {report['server']['exit_code']})")
    if report["server"]["restarts"]:
        reasons.append("server restarted")
    # strata exits 0 after SIGTERM once in-flight requests finish; anything
    # else is a failed shutdown, or a sanitizer (LeakSanitizer) report at exit.
    if not report["server"]["crashed"] and report["server"]["exit_code"] != 0:
        reasons.append(f"server exited with code {report['server']['exit_code']} after SIGTERM")
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
