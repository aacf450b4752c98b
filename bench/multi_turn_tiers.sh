#!/usr/bin/env bash
# The headline experiment: multi-turn serving throughput as the number of
# conversations outgrows memory, for three configurations of one server:
#   no-offload   KV pool only (160 MiB = ~10K tokens, about 4 conversations)
#   host         + host tier of 384 MiB (~24K tokens, about 11 conversations)
#   host+fs      + filesystem tier (unbounded, on local disk)
# Workload (`strata bench serve --dataset multi-turn`): each conversation has a
# 1,024-token first turn and 4 more rounds of 256 tokens, 32-token answers,
# turns of all conversations interleaved round-robin, 4 in flight. This is the
# vLLM tiered-offloading evaluation (12K + 4K x 8, 64 in flight) scaled down
# ~12x in tokens so a sweep runs in minutes on 2 cores.
#
#   bench/multi_turn_tiers.sh [OUT_DIR]      (default docs/bench-results/multi_turn_tiers)
# Env: MODEL (default /tmp/strata-bench/bench-small, made if missing),
#      SWEEP (default 2,4,8,16,32), STRATA (the binary),
#      KV_DTYPE (--kv-cache-dtype; default auto: bf16 for the bf16 bench model; when
#      set, labels get a -DTYPE suffix), CONFIGS (default "no-offload host host+fs").
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-docs/bench-results/multi_turn_tiers}
MODEL=${MODEL:-/tmp/strata-bench/bench-small}
SWEEP=${SWEEP:-2,4,8,16,32}
STRATA=${STRATA:-build/release/apps/strata/strata}
KV_DTYPE=${KV_DTYPE:-}
CONFIGS=${CONFIGS:-no-offload host host+fs}
SUFFIX=${KV_DTYPE:+-$KV_DTYPE}
FS_DIR=$(mktemp -d /tmp/strata-mt-fs-XXXXXX)
trap 'rm -rf "$FS_DIR"; [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null || true' EXIT
mkdir -p "$OUT"
if [ ! -f "$MODEL/config.json" ]; then
  /usr/bin/python3 tools/reference/make_checkpoint.py --arch qwen2 --dtype bf16 \
    --shape bench-small --out "$MODEL"
fi

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_config() {
  local label=$1$SUFFIX; shift
  [ -n "$KV_DTYPE" ] && set -- --kv-cache-dtype "$KV_DTYPE" "$@"
  local port; port=$(free_port)
  "$STRATA" serve "$MODEL" --host 127.0.0.1 --port "$port" --max-model-len 4096 \
    --kv-cache-memory 160MiB --disable-log-stats "$@" > "$OUT/$label.server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
    sleep 0.5
  done
  echo "== $label: $*" >&2
  "$STRATA" bench serve --base-url "http://127.0.0.1:$port" --dataset multi-turn \
    --sweep-num-conversations "$SWEEP" --multi-turn-first-len 1024 \
    --multi-turn-num-rounds 4 --multi-turn-round-len 256 --multi-turn-output-len 32 \
    --max-concurrency 4 --ignore-eos --reset-prefix-cache --seed 7 --label "$label" \
    --result-file "$OUT/$label.json" --plot "$OUT/$label.png" | tee "$OUT/$label.txt"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
  SERVER=
}

start=$(date +%s)
has() { [[ " $CONFIGS " == *" $1 "* ]]; }
plots=()
if has no-offload; then run_config no-offload; plots+=("$OUT/no-offload$SUFFIX.json"); fi
if has host; then
  run_config host --kv-offloading-size 0.375
  plots+=("$OUT/host$SUFFIX.json")
fi
if has host+fs; then
  plots+=("$OUT/host+fs$SUFFIX.json")
  run_config host+fs --kv-transfer-config "{\"kv_connector\":\"OffloadingConnector\",\"kv_role\":\"kv_both\",\"kv_connector_extra_config\":{\"spec_name\":\"TieringOffloadingSpec\",\"cpu_bytes_to_use\":402653184,\"eviction_policy\":\"lru\",\"secondary_tiers\":[{\"type\":\"fs\",\"root_dir\":\"$FS_DIR\",\"n_read_threads\":4,\"n_write_threads\":4}]}}"
fi
"$STRATA" bench plot "${plots[@]}" --output "$OUT/multi_turn_tiers$SUFFIX.png"
echo "sweep took $(( $(date +%s) - start )) s; plot: $OUT/multi_turn_tiers$SUFFIX.png" >&2
