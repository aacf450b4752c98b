#!/usr/bin/env bash
# Multi-turn chat, side by side: `strata serve` (KV pool + host tier + filesystem
# tier) and llama.cpp's `llama-server` (its prompt cache in host RAM) on the
# identical GGUF, driven in turn by the same client and workload:
#   strata bench serve --dataset multi-turn: N conversations, a 1,024-token first
#   turn + 4 rounds of 256 tokens, 32-token answers, 4 in flight, ignore_eos.
# Both get the same host-memory budget for reused KV (--host-mib, default 384):
# Strata's host tier (cpu_bytes_to_use) and llama-server's --cache-ram. Strata's
# KV pool is --pool-mib (default 160); llama-server has --parallel 4 slots of
# --ctx-per-slot tokens (default 2,400: the longest conversation, 2,176 tokens,
# plus headroom). Runs alternate engine by engine per conversation count, and the
# machine's read bandwidth (ops_bench BM_MemRead) is measured before and after.
#
#   bench/multi_turn_side_by_side.sh [--conversations "16 32"] [--threads N]
#       [--host-mib 384] [--pool-mib 160] [--work DIR] [--strata BIN] [--gguf FILE]
#       [--llama-server BIN] [--engines "strata llama.cpp"] [--strata-base BIN]
#       [--strata-kv-dtypes "float32 fp8"]
# --strata-base adds engine "strata-base", another strata binary (say, the
# commit before a change), run with the same flags in the same sitting.
# --strata-kv-dtypes "float32 fp8" adds engines "strata-kv-float32", ...: the
# same binary with that --kv-cache-dtype (plain "strata" runs the default, auto).
#
# Without --gguf the model is bench-small (tools/reference/make_checkpoint.py
# --shape bench-small, bf16) converted with llama.cpp's convert_hf_to_gguf.py.
# llama-server comes from bench/side_by_side.sh --build-only (the llama.cpp
# source bundled in npm node-llama-cpp). Prints one table with the ratios.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STRATA="$ROOT/build/release/apps/strata/strata"
WORK="${TMPDIR:-/tmp}/strata-side-by-side"
GGUF=""
CONVERSATIONS="16 32"
THREADS="$(nproc)"
HOST_MIB=384
POOL_MIB=160
CTX_PER_SLOT=2400
LLAMA_SERVER=""
ENGINES="strata llama.cpp"
STRATA_BASE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --conversations) CONVERSATIONS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --host-mib) HOST_MIB="$2"; shift 2 ;;
    --pool-mib) POOL_MIB="$2"; shift 2 ;;
    --ctx-per-slot) CTX_PER_SLOT="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --strata) STRATA="$2"; shift 2 ;;
    --gguf) GGUF="$2"; shift 2 ;;
    --llama-server) LLAMA_SERVER="$2"; shift 2 ;;
    --engines) ENGINES="$2"; shift 2 ;;
    --strata-base) STRATA_BASE="$2"; ENGINES="strata-base $ENGINES"; shift 2 ;;
    --strata-kv-dtypes)
      for d in $2; do ENGINES="strata-kv-$d $ENGINES"; done
      shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
PY="${STRATA_REF_PYTHON:-/usr/bin/python3}"
source "$ROOT/bench/server_lib.sh"
RESULTS="$WORK/multi-turn"
mkdir -p "$RESULTS"
[[ -x "$STRATA" ]] || { echo "strata binary $STRATA not found" >&2; exit 1; }

if [[ -z "$LLAMA_SERVER" && " $ENGINES " == *" llama.cpp "* ]]; then
  bash "$ROOT/bench/side_by_side.sh" --work "$WORK" --build-only >&2
  LLAMA_SERVER="$WORK/llama-build/bin/llama-server"
fi
if [[ -z "$GGUF" ]]; then
  hf="$WORK/bench-small-bf16"
  GGUF="$WORK/bench-small-bf16.gguf"
  if [[ ! -f "$GGUF" ]]; then
    [[ -f "$hf/config.json" ]] || "$PY" "$ROOT/tools/reference/make_checkpoint.py" --arch qwen2 \
      --shape bench-small --dtype bf16 --seed 1 --out "$hf"
    "$ROOT/tools/llamacpp/convert.sh" "$hf" "$GGUF.tmp" bf16
    mv "$GGUF.tmp" "$GGUF"
  fi
fi

FS_DIR=""
stop_and_clean() {  # the server, then its filesystem tier directory
  stop_server
  [[ -n "$FS_DIR" ]] && rm -rf "$FS_DIR"
  FS_DIR=""
}
trap stop_and_clean EXIT

start_server() {  # start_server ENGINE PORT LOG
  local engine="$1" port="$2" log="$3"
  if [[ "$engine" == strata* ]]; then
    local bin="$STRATA"
    [[ "$engine" == strata-base ]] && bin="$STRATA_BASE"
    local dtype_flags=()
    [[ "$engine" == strata-kv-* ]] && dtype_flags=(--kv-cache-dtype "${engine#strata-kv-}")
    FS_DIR="$(mktemp -d "$WORK/fs-tier-XXXXXX")"
    local kv
    kv="{\"kv_connector\":\"OffloadingConnector\",\"kv_role\":\"kv_both\",\"kv_connector_extra_config\":"
    kv+="{\"spec_name\":\"TieringOffloadingSpec\",\"cpu_bytes_to_use\":$((HOST_MIB << 20)),"
    kv+="\"eviction_policy\":\"lru\",\"secondary_tiers\":[{\"type\":\"fs\",\"root_dir\":\"$FS_DIR\","
    kv+="\"n_read_threads\":2,\"n_write_threads\":2}]}}"
    "$bin" serve "$GGUF" --host 127.0.0.1 --port "$port" --threads "$THREADS" \
      --max-model-len 4096 --kv-cache-memory "${POOL_MIB}MiB" --max-num-seqs 4 \
      --kv-transfer-config "$kv" --disable-log-stats "${dtype_flags[@]}" >"$log" 2>&1 &
  else
    "$LLAMA_SERVER" -m "$GGUF" --host 127.0.0.1 --port "$port" -fa on --parallel 4 \
      -c $((4 * CTX_PER_SLOT)) --cache-ram "$HOST_MIB" --threads "$THREADS" \
      --threads-batch "$THREADS" --no-webui >"$log" 2>&1 &
  fi
  SERVER_PID=$!
  wait_healthy "$engine" "$port" "$log"
}

run_one() {  # run_one ENGINE N
  local engine="$1" n="$2" port
  port="$(free_port)"
  start_server "$engine" "$port" "$RESULTS/$engine-n$n.log"
  echo "== $engine, $n conversations" >&2
  "$STRATA" bench serve --base-url "http://127.0.0.1:$port" --dataset multi-turn --disable-tqdm \
    --num-prompts "$n" --multi-turn-first-len 1024 --multi-turn-num-rounds 4 \
    --multi-turn-round-len 256 --multi-turn-output-len 32 --max-concurrency 4 --ignore-eos \
    --seed 7 --label "$engine" --result-file "$RESULTS/$engine-n$n.json" \
    | grep -E "throughput|Mean TTFT|Mean TPOT|Failed" >&2
  if [[ "$engine" == strata* ]]; then  # where its engine thread's time went
    curl -s "http://127.0.0.1:$port/metrics" > "$RESULTS/$engine-n$n.metrics" || true
  fi
  stop_and_clean
}

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" \
  > "$RESULTS/machine.txt"
echo "bandwidth before: $(bandwidth)" >> "$RESULTS/machine.txt"
for n in $CONVERSATIONS; do
  for engine in $ENGINES; do run_one "$engine" "$n"; done
done
echo "bandwidth after: $(bandwidth)" >> "$RESULTS/machine.txt"

"$PY" - "$RESULTS" "$CONVERSATIONS" "$ENGINES" "$THREADS" "$GGUF" "$HOST_MIB" <<'PYEOF'
import json, os, sys
results, levels, engines, threads, gguf, host_mib = sys.argv[1], sys.argv[2].split(), \
    sys.argv[3].split(), *sys.argv[4:]
with open(os.path.join(results, "machine.txt")) as f:
    print(f.read().strip())
cols = [("total_token_throughput", "total tok/s"), ("output_throughput", "out tok/s"),
        ("mean_ttft_ms", "mean TTFT ms"), ("mean_tpot_ms", "mean TPOT ms"),
        ("cached", "cached %")]
def cached(r):
    turns = r.get("per_turn", [])
    prompt = sum(t["requests"] * t["mean_prompt_tokens"] for t in turns)
    hit = sum(t["requests"] * t["mean_prompt_tokens"] * t["cached_fraction"] for t in turns)
    return 100.0 * hit / prompt if prompt else float("nan")
print(f"{os.path.basename(gguf)}, {threads} thread(s), host-memory budget {host_mib} MiB, "
      "multi-turn 1024 + 4 x 256 in, 32 out, 4 in flight")
print(f"{'conv':>4}  {'engine':<16}" + "".join(f"{h:>14}" for _, h in cols) + f"{'failed':>8}")
for n in levels:
    r = {}
    for engine in engines:
        with open(os.path.join(results, f"{engine}-n{n}.json")) as f:
            r[engine] = json.load(f)
        r[engine]["cached"] = cached(r[engine])
        row = "".join(f"{r[engine][k]:14.2f}" for k, _ in cols)
        print(f"{n:>4}  {engine:<16}{row}{r[engine]['failed']:8d}")
    b = "llama.cpp" if "llama.cpp" in engines else engines[-1]
    for a in [e for e in engines if e != b]:
        ratio = "".join(f"{(r[a][k] / r[b][k]) if r[b][k] else float('nan'):13.2f}x"
                        for k, _ in cols)
        print(f"{n:>4}  {a + '/' + b:<16}{ratio}")
for n in levels:
    for engine in engines:
        path = os.path.join(results, f"{engine}-n{n}.metrics")
        if not os.path.exists(path):
            continue
        phases = {}
        with open(path) as f:
            for line in f:
                if line.startswith("strata:engine_step_seconds_total{"):
                    phase = line.split('phase="')[1].split('"')[0]
                    phases[phase] = float(line.rsplit(" ", 1)[1])
        total = sum(phases.values())
        if total > 0:
            split = ", ".join(f"{k} {v:.1f} s ({100 * v / total:.0f}%)" for k, v in phases.items())
            print(f"{n:>4}  {engine}: engine thread {split}")
PYEOF
