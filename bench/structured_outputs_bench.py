#!/usr/bin/python3
"""What a JSON-schema constraint costs per generated token, served.

Starts `strata serve MODEL` (2 threads by default), then streams the same chat
prompt alternately unconstrained (ignore_eos, a fixed number of tokens) and
constrained by a tool-call-like JSON schema (response_format json_schema), and
reports the mean time per output token (TPOT, from the SSE chunk times) of
each, the ratio, and the first request's TTFT with the schema (which includes
compiling it). The constrained requests run at temperature 1 so the grammar's
states vary as they would with a real model; the schema's strings are
bounded so every request ends.

Usage: bench/structured_outputs_bench.py --strata build/release/apps/strata/strata
         --model DIR [--rounds 6] [--threads 2] [--tokens 96]
Stdlib only; run with /usr/bin/python3.
"""

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request

SCHEMA = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "maxLength": 24},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "include_hourly": {"type": "boolean"},
        "filters": {
            "type": "object",
            "properties": {
                "min_temp": {"type": "number", "minimum": -90, "maximum": 60},
                "conditions": {"type": "array", "items": {"type": "string", "maxLength": 12},
                               "maxItems": 4},
            },
            "required": ["min_temp", "conditions"],
        },
    },
    "required": ["location", "unit", "days", "include_hourly", "filters"],
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stream(url, body):
    """(ttft_s, tpot_s, completion tokens, text) of one streamed chat request.
    TPOT = (last chunk - first chunk) / (completion tokens - 1): tokens that
    end inside a UTF-8 character send no chunk of their own."""
    body = dict(body, stream_options={"include_usage": True})
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    times, text, tokens = [], "", 0
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            for c in chunk.get("choices", []):
                piece = c.get("delta", {}).get("content") or ""
                if piece:
                    times.append(time.perf_counter())
                    text += piece
    tpot = (times[-1] - times[0]) / (tokens - 1) if len(times) > 1 and tokens > 1 else float("nan")
    return (times[0] - t0 if times else float("nan")), tpot, tokens, text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=96)
    a = ap.parse_args()
    port = free_port()
    proc = subprocess.Popen([a.strata, "serve", a.model, "--host", "127.0.0.1", "--port", str(port),
                             "--threads", str(a.threads), "--kv-cache-memory", "512MiB",
                             "--disable-log-stats"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if urllib.request.urlopen(base + "/health", timeout=1).status == 200:
                    break
            except Exception:
                time.sleep(0.2)
        url = base + "/v1/chat/completions"
        messages = [{"role": "user", "content": "What is the weather in Paris this week?"}]
        plain = {"messages": messages, "stream": True, "max_tokens": a.tokens,
                 "ignore_eos": True, "temperature": 1.0}
        constrained = {"messages": messages, "stream": True, "max_tokens": 400, "temperature": 1.0,
                       "response_format": {"type": "json_schema",
                                           "json_schema": {"name": "weather", "schema": SCHEMA}}}
        stream(url, dict(plain, max_tokens=8))  # warm-up
        first_ttft = None
        plain_tpot, json_tpot, json_tokens = [], [], []
        for i in range(a.rounds):
            _, t, _, _ = stream(url, plain)
            plain_tpot.append(t)
            ttft, t, n, text = stream(url, dict(constrained, seed=i))
            if first_ttft is None:
                first_ttft = ttft
            json.loads(text)  # schema-valid by construction; must at least parse
            json_tpot.append(t)
            json_tokens.append(n)
        mean = lambda v: sum(v) / len(v)
        print(f"rounds {a.rounds}, threads {a.threads}")
        print(f"unconstrained TPOT   {mean(plain_tpot) * 1e3:8.2f} ms  "
              f"(min {min(plain_tpot) * 1e3:.2f}, max {max(plain_tpot) * 1e3:.2f})")
        print(f"json_schema TPOT     {mean(json_tpot) * 1e3:8.2f} ms  "
              f"(min {min(json_tpot) * 1e3:.2f}, max {max(json_tpot) * 1e3:.2f}; "
              f"{mean(json_tokens):.0f} tokens per answer)")
        print(f"ratio                {mean(json_tpot) / mean(plain_tpot):8.3f}")
        print(f"first json_schema TTFT (compiles the schema) {first_ttft * 1e3:.1f} ms")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
