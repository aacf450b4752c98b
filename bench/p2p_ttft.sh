#!/usr/bin/env bash
# Time to first token on a second instance for a long prefix another instance
# already computed: loaded through the peer-to-peer KV tier vs recomputed
# (see BENCHMARKS.md, "Peer-to-peer tier").
#
# Two `strata serve` processes on loopback: A (p2p tier, no peers) and B (p2p
# tier, peer A). Each repeat uses a fresh random prefix of PREFIX_TOKENS token
# ids plus 16-token suffixes, max_tokens 1, non-streamed (the response time is
# the TTFT):
#   1. A answers prefix + suffix_a      (computes the prefix; its chunks reach A's peer tier)
#   2. B answers prefix + suffix_b      -> "p2p": the prefix is fetched from A
#   3. B answers other prefix + suffix  -> "recompute": the peer, same length, same run
# Prints each request and the medians; B's /metrics give the bytes moved.
#
# Usage: bench/p2p_ttft.sh [MODEL_DIR] [PREFIX_TOKENS] [REPEATS] [THREADS]
#   default model: /tmp/strata-bench/qwen2.5-0.5b-bf16 if present (2000-token
#   prefix), else models/strata-tiny (400). STRATA=path overrides the binary.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STRATA=${STRATA:-$ROOT/build/release/apps/strata/strata}
MODEL=${1:-}
PREFIX=${2:-}
if [[ -z $MODEL ]]; then
  if [[ -f /tmp/strata-bench/qwen2.5-0.5b-bf16/config.json ]]; then
    MODEL=/tmp/strata-bench/qwen2.5-0.5b-bf16
  else
    MODEL=$ROOT/models/strata-tiny
  fi
fi
if [[ -z $PREFIX ]]; then
  if [[ $MODEL == *strata-tiny* ]]; then PREFIX=400; else PREFIX=2000; fi
fi
REPEATS=${3:-3}
THREADS=${4:-2}

exec /usr/bin/python3 - "$STRATA" "$MODEL" "$PREFIX" "$REPEATS" "$THREADS" <<'EOF'
import json, os, random, re, signal, socket, statistics, subprocess, sys, threading, time
import urllib.request

STRATA, MODEL, PREFIX, REPEATS, THREADS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
os.environ["STRATA_P2P_SECRET"] = "p2p-ttft-bench-secret-0123456789"
SUFFIX = 16
vocab = json.load(open(os.path.join(MODEL, "config.json")))["vocab_size"]
rng = random.Random(1234)


def ids(n):
    return [rng.randrange(100, min(vocab, 30000)) for _ in range(n)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(port, peers):
    return json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {
                           "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 1 << 30,
                           "secondary_tiers": [{"type": "p2p", "host": "127.0.0.1", "port": port,
                                                "peers": [f"127.0.0.1:{p}" for p in peers]}]}})


class Server:
    def __init__(self, name, port, peers):
        self.proc = subprocess.Popen(
            [STRATA, "serve", MODEL, "--host", "127.0.0.1", "--port", "0", "--threads", THREADS,
             "--kv-cache-memory", "512MiB", "--max-model-len", str(PREFIX + 4 * SUFFIX + 64),
             "--disable-log-stats", "--kv-transfer-config", config(port, peers)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            m = re.search(r"serving .* on (http://\S+)", line)
            if m:
                self.base = m.group(1)
                break
        else:
            raise SystemExit(f"{name} did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def ttft(self, prompt):
        body = json.dumps({"model": MODEL, "prompt": prompt, "max_tokens": 1, "temperature": 0})
        req = urllib.request.Request(self.base + "/v1/completions", body.encode(),
                                     {"Content-Type": "application/json"})
        start = time.perf_counter()
        with urllib.request.urlopen(req, timeout=600) as r:
            out = json.load(r)
        return time.perf_counter() - start, out["usage"]["prompt_tokens_details"]["cached_tokens"]

    def metric(self, name):
        with urllib.request.urlopen(self.base + "/metrics", timeout=30) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + "{") and 'tier="p2p"' in line:
                    return float(line.rsplit(" ", 1)[1])
        return 0.0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


pa, pb = free_port(), free_port()
a = Server("A", pa, [])
b = Server("B", pb, [pa])
print(f"model {MODEL}, prefix {PREFIX} + {SUFFIX} tokens, {REPEATS} repeats, --threads {THREADS}")
p2p, recompute, on_a = [], [], []
try:
    for r in range(REPEATS):
        prefix = ids(PREFIX)
        t_a, _ = a.ttft(prefix + ids(SUFFIX))
        want = (r + 1) * (PREFIX // 16)
        deadline = time.time() + 60
        while a.metric("strata:kv_tier_chunks") < want and time.time() < deadline:
            time.sleep(0.05)
        t_p2p, cached = b.ttft(prefix + ids(SUFFIX))
        t_re, cached_re = b.ttft(ids(PREFIX) + ids(SUFFIX))
        on_a.append(t_a)
        p2p.append(t_p2p)
        recompute.append(t_re)
        print(f"repeat {r}: A computes {t_a * 1e3:8.0f} ms | B from peer {t_p2p * 1e3:7.0f} ms "
              f"(cached {cached}) | B recomputes {t_re * 1e3:8.0f} ms (cached {cached_re})",
              flush=True)
    read_bytes = b.metric("vllm:kv_offload_tiering_read_bytes_total")
    read_s = b.metric("vllm:kv_offload_tiering_read_time_total")
    med_p2p, med_re = statistics.median(p2p), statistics.median(recompute)
    print(f"median TTFT: B from peer {med_p2p * 1e3:.0f} ms, B recompute {med_re * 1e3:.0f} ms "
          f"({med_re / med_p2p:.1f}x), A compute {statistics.median(on_a) * 1e3:.0f} ms")
    print(f"B fetched {read_bytes / 1e6:.1f} MB from A in {read_s:.3f} s of summed job time "
          f"({read_bytes / 1e6 / max(read_s, 1e-9):.0f} MB/s per job)")
finally:
    a.stop()
    b.stop()
EOF
