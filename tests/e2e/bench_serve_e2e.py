#!/usr/bin/env python3
"""End-to-end: `strata bench serve` against the real `strata serve`.

Starts the server (bundled model, free loopback port), runs the benchmark
client for the random dataset on both endpoints, the multi-turn dataset and a
small sweep with a plot, and checks the result JSON: vLLM's keys, every
request completed, token totals as requested, latencies positive, prefix
cache hits on later turns.

usage: bench_serve_e2e.py STRATA_BIN MODEL_DIR   (stdlib only)
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

VLLM_KEYS = [
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
    "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
    "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
    "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
    "max_concurrent_requests",
] + [f"{stat}_{metric}_ms" for metric in ("ttft", "tpot", "itl", "e2el")
     for stat in ("mean", "median", "std", "p90", "p99")]


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def start_server(binary, model):
    proc = subprocess.Popen(
        [binary, "serve", model, "--host", "127.0.0.1", "--port", "0", "--kv-cache-memory",
         "64MiB", "--threads", "1", "--shutdown-timeout", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    log = ""
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            raise RuntimeError("strata serve exited early:\n" + log)
        log += line
        m = re.search(r"serving .* on http://127\.0\.0\.1:(\d+)", line)
        if m:
            base = f"http://127.0.0.1:{m.group(1)}"
            while time.time() < deadline:
                try:
                    if urllib.request.urlopen(base + "/health", timeout=2).status == 200:
                        return proc, base
                except OSError:
                    time.sleep(0.05)
    proc.kill()
    raise RuntimeError("server never became healthy:\n" + log)


def bench(binary, base, out_dir, name, *args):
    result = os.path.join(out_dir, name + ".json")
    cmd = [binary, "bench", "serve", "--base-url", base, "--disable-tqdm", "--save-detailed",
           "--result-file", result, *args]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    print(f"$ {' '.join(cmd)}\n{run.stdout}{run.stderr}")
    check(run.returncode == 0, f"{name}: exit code {run.returncode}")
    with open(result) as f:
        return json.load(f), run.stdout


def check_common(r, num_requests):
    missing = [k for k in VLLM_KEYS if k not in r]
    check(not missing, f"missing vLLM keys {missing}")
    check(r["completed"] == num_requests, f"completed {r['completed']} != {num_requests}")
    check(r["failed"] == 0, f"failed {r['failed']}")
    check(r["duration"] > 0 and r["request_throughput"] > 0, "no throughput")
    check(r["output_throughput"] > 0 and r["total_token_throughput"] > r["output_throughput"],
          "token throughputs")
    check(0 < r["mean_ttft_ms"] <= r["mean_e2el_ms"], "TTFT must be positive and below E2EL")
    check(r["p99_ttft_ms"] >= r["median_ttft_ms"], "p99 below the median")
    check(len(r["latencies"]) == num_requests, "latencies list")
    check_tpot_itl(r)


def check_tpot_itl(r):
    """TPOT and ITL as vLLM defines them, recomputed from the per-request lists.

    Neither is asserted positive: tokens that reach the client in one read
    (a busy 2-core machine delays the client thread) share one arrival time,
    so a request's ITLs and TPOT may legitimately be 0 (this failed the suite
    once). What is deterministic is the arithmetic: TPOT = (E2EL - TTFT) /
    (output tokens - 1) over requests with more than one token, and ITLs are
    never negative.
    """
    tpots = [(lat - ttft) / (out - 1) for lat, ttft, out in
             zip(r["latencies"], r["ttfts"], r["output_lens"]) if out > 1]
    check(tpots, "no request produced more than one token")
    want = 1000 * sum(tpots) / len(tpots)
    check(abs(r["mean_tpot_ms"] - want) <= 1e-6 * max(1.0, want),
          f"mean TPOT {r['mean_tpot_ms']} ms != {want} ms from the per-request lists")
    check(r["mean_tpot_ms"] >= 0 and r["mean_itl_ms"] >= 0, "TPOT/ITL negative")
    check(all(itl >= 0 for itls in r["itls"] for itl in itls), "a negative ITL")
    for lat, ttft in zip(r["latencies"], r["ttfts"]):
        check(0 < ttft <= lat, f"TTFT {ttft} s outside (0, E2EL {lat} s]")


def main():
    binary, model = sys.argv[1], sys.argv[2]
    proc, base = start_server(binary, model)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            r, out = bench(binary, base, tmp, "random", "--num-prompts", "8",
                           "--random-input-len", "64", "--random-output-len", "16",
                           "--max-concurrency", "4", "--num-warmups", "1")
            check_common(r, 8)
            check(r["total_input_tokens"] == 8 * 64, "input tokens (token-id prompts are exact)")
            check(r["total_output_tokens"] == 8 * 16, "output tokens (ignore_eos)")
            check(r["request_rate"] == "inf" and r["max_concurrency"] == 4, "run description")
            check("Serving Benchmark Result" in out and "P99 TTFT (ms):" in out, "summary table")

            r, _ = bench(binary, base, tmp, "chat", "--endpoint", "/v1/chat/completions",
                         "--num-prompts", "4", "--random-input-len", "48",
                         "--random-output-len", "8", "--request-rate", "20")
            check_common(r, 4)
            check(r["total_output_tokens"] == 4 * 8, "chat output tokens")
            check(r["request_rate"] == 20, "finite rate recorded")

            r, out = bench(binary, base, tmp, "multi_turn", "--dataset", "multi-turn",
                           "--num-prompts", "3", "--multi-turn-first-len", "100",
                           "--multi-turn-num-rounds", "2", "--multi-turn-round-len", "20",
                           "--multi-turn-output-len", "8", "--ignore-eos",
                           "--max-concurrency", "2")
            check_common(r, 9)
            turns = r["per_turn"]
            check([t["turn"] for t in turns] == [0, 1, 2], f"per-turn rows {turns}")
            check(all(t["requests"] == 3 for t in turns), "3 requests per turn")
            check(turns[2]["mean_prompt_tokens"] > turns[1]["mean_prompt_tokens"] >
                  turns[0]["mean_prompt_tokens"], "prompts grow turn by turn")
            check(turns[1]["cached_fraction"] > 0.5 and turns[2]["cached_fraction"] > 0.5,
                  "later turns reuse the conversation prefix")
            device = [t for t in r["prefix_cache"]["tiers"] if t["tier"] == "device"]
            check(device and device[0]["hits"] > 0, "device prefix-cache hits from /metrics")
            check(r["multi_turn"]["truncated_conversations"] == 0, "no truncation")
            check("TTFT by turn" in out and "Prefix cache hits" in out, "multi-turn tables")

            plot = os.path.join(tmp, "sweep.png")
            r, _ = bench(binary, base, tmp, "sweep", "--num-prompts", "4",
                         "--random-input-len", "32", "--random-output-len", "4",
                         "--sweep-max-concurrency", "1,2", "--plot", plot)
            check(r["sweep_parameter"] == "max_concurrency" and r["values"] == [1, 2], "sweep")
            for point in r["results"]:
                check_common(point, 4)
            with open(plot, "rb") as f:
                check(f.read(8) == b"\x89PNG\r\n\x1a\n", "PNG signature")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    print("bench_serve_e2e: all checks passed")


if __name__ == "__main__":
    main()
