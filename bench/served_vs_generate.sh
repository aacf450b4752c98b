#!/usr/bin/env bash
# A served single stream against the engine's own decode rate (issue 23's target: a served
# stream decodes at >= 0.95x `strata generate --bench` on the same model).
#
#   bench/served_vs_generate.sh [--strata BIN] [--work DIR] [--models "A.gguf B.gguf"]
#                               [--rounds 3] [--threads N] [--requests 8]
#
# Each round, for each model, one after the other:
#   1. `strata generate --bench --bench-depth 256 --bench-gen-tokens 128`: tg128 at context
#      256-384, where a served 256-token prompt decodes (the like-for-like figure);
#   2. `strata serve --max-num-seqs 1`, warmed up with one request, then REQUESTS random
#      256-in / 128-out requests from `strata bench serve --max-concurrency 1`; the served
#      rate is 1000 / mean TPOT (ms).
# Prints each round's ratio served / generate and the median per model. Models default to
# the two GGUFs bench/serving_vs_llama_server.sh writes to its work folder (the Qwen2.5-0.5B
# shape and bench-small, BF16); run that script (or bench/side_by_side.sh --build-only)
# first, or name files with --models.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STRATA="$ROOT/build/release/apps/strata/strata"
WORK=/tmp/strata-side-by-side
MODELS=""
ROUNDS=3
THREADS="$(nproc)"
REQUESTS=8
while [[ $# -gt 0 ]]; do
  case "$1" in
    --strata) STRATA="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --requests) REQUESTS="$2"; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
PY="${STRATA_REF_PYTHON:-/usr/bin/python3}"
source "$ROOT/bench/server_lib.sh"
[[ -n "$MODELS" ]] || MODELS="$WORK/qwen2.5-0.5b-bf16.gguf $WORK/bench-small-bf16.gguf"
for m in $MODELS; do
  [[ -f "$m" ]] || { echo "no model $m: run bench/serving_vs_llama_server.sh first, or pass --models" >&2; exit 1; }
done
OUT="$WORK/served-vs-generate"
mkdir -p "$OUT"
trap stop_server EXIT
RESULTS="$OUT/results.txt"
: >"$RESULTS"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $THREADS thread(s), bandwidth before: $(bandwidth)" \
  | tee "$OUT/machine.txt" >&2

for round in $(seq 1 "$ROUNDS"); do
  for model in $MODELS; do
    name="$(basename "$model" .gguf)"
    gen="$("$STRATA" generate --bench --model "$model" --threads "$THREADS" \
      --bench-prompt-tokens 64 --bench-gen-tokens 128 --bench-depth 256 \
      --bench-repetitions 1 2>/dev/null | sed -n 's/.*tg128 @ d256 \([0-9.]*\) tokens\/s.*/\1/p')"
    [[ -n "$gen" ]] || { echo "no tg128 figure from strata generate on $model" >&2; exit 1; }
    port="$(free_port)"
    "$STRATA" serve "$model" --host 127.0.0.1 --port "$port" --threads "$THREADS" \
      --max-num-seqs 1 --disable-log-stats >"$OUT/$name-serve.log" 2>&1 &
    SERVER_PID=$!
    wait_healthy strata "$port" "$OUT/$name-serve.log"
    common=(--base-url "http://127.0.0.1:$port" --dataset random --disable-tqdm
            --random-input-len 256 --max-concurrency 1)
    "$STRATA" bench serve "${common[@]}" --num-prompts 1 --random-output-len 4 --seed 999 \
      >/dev/null
    "$STRATA" bench serve "${common[@]}" --num-prompts "$REQUESTS" --random-output-len 128 \
      --seed "$round" --result-file "$OUT/$name-r$round.json" >/dev/null
    stop_server
    tpot="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["mean_tpot_ms"])' \
      "$OUT/$name-r$round.json")"
    echo "$name $round $gen $tpot" | tee -a "$RESULTS" >&2
  done
done
echo "# bandwidth after: $(bandwidth)" | tee -a "$OUT/machine.txt" >&2

"$PY" - "$RESULTS" <<'PYEOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, rnd, gen, tpot = line.split()
    rows.setdefault(name, []).append((int(rnd), float(gen), float(tpot)))
print(f"{'model':24s} {'round':>5s} {'generate tg128@d256':>20s} {'served (TPOT ms)':>20s} "
      f"{'served/generate':>16s}")
for name, rs in rows.items():
    ratios = []
    for rnd, gen, tpot in rs:
        served = 1000.0 / tpot
        ratios.append(served / gen)
        print(f"{name:24s} {rnd:5d} {gen:20.1f} {served:12.1f} ({tpot:5.2f}) {served / gen:15.2f}x")
    print(f"{name:24s} {'median':>5s} {'':20s} {'':20s} {statistics.median(ratios):15.2f}x")
PYEOF
cat "$OUT/machine.txt"
