#!/usr/bin/env bash
# Speculative decoding, A/B on one model: `strata serve MODEL` without speculation and with
# each given --speculative-config, servers alternated (plain, spec 1, spec 2, ..., then again
# for each round), each driven by the same `strata bench serve` random workload at every
# concurrency level. Acceptance comes from the server's vllm:spec_decode_* counters, read
# before and after each measured run. Prints output tok/s per run, spec / plain of the same
# round, acceptance rate and mean acceptance length (1 + accepted / drafts).
#
#   bench/spec_decode_ab.sh --model MODEL --spec 'JSON' [--spec 'JSON' ...]
#                           [--strata BIN] [--concurrency "1 8"] [--rounds 2]
#                           [--input-len 128] [--output-len 128] [--temperature 0]
#                           [--prompts-per-slot 2] [--threads N] [--work DIR]
#
# MODEL is whatever `strata serve` takes (directory, .gguf). A draft_model config names its
# draft in the JSON ("model"). Each level sends max(4, prompts-per-slot x C) prompts after one
# unmeasured warm-up request with another seed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STRATA="$ROOT/build/release/apps/strata/strata"
WORK="${TMPDIR:-/tmp}/strata-spec-ab"
MODEL=""
SPECS=()
CONCURRENCY="1 8"
ROUNDS=2
INPUT_LEN=128
OUTPUT_LEN=128
TEMPERATURE=0
PROMPTS_PER_SLOT=2
THREADS="$(nproc)"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --strata) STRATA="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --spec) SPECS+=("$2"); shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --input-len) INPUT_LEN="$2"; shift 2 ;;
    --output-len) OUTPUT_LEN="$2"; shift 2 ;;
    --temperature) TEMPERATURE="$2"; shift 2 ;;
    --prompts-per-slot) PROMPTS_PER_SLOT="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -n "$MODEL" && ${#SPECS[@]} -gt 0 ]] || { echo "need --model and at least one --spec" >&2; exit 2; }
PY="${STRATA_REF_PYTHON:-/usr/bin/python3}"
source "$ROOT/bench/server_lib.sh"
[[ -x "$STRATA" ]] || { echo "strata binary $STRATA not found (build the strata target)" >&2; exit 1; }
rm -rf "$WORK/results" && mkdir -p "$WORK/results"
trap stop_server EXIT

max_c=1
for c in $CONCURRENCY; do (( c > max_c )) && max_c=$c; done

counters() {  # counters PORT: "drafts draft_tokens accepted" from /metrics
  curl -sf "http://127.0.0.1:$1/metrics" | awk '
    /^vllm:spec_decode_num_drafts_total/ {d += $NF}
    /^vllm:spec_decode_num_draft_tokens_total/ {t += $NF}
    /^vllm:spec_decode_num_accepted_tokens_total/ {a += $NF}
    END {printf "%d %d %d\n", d, t, a}'
}

run_server() {  # run_server ROUND INDEX (0 = plain, i = SPECS[i-1])
  local round="$1" i="$2" port log
  port="$(free_port)"
  log="$WORK/results/r$round-s$i.log"
  local extra=()
  (( i > 0 )) && extra=(--speculative-config "${SPECS[i-1]}")
  "$STRATA" serve "$MODEL" --host 127.0.0.1 --port "$port" --threads "$THREADS" \
    --max-num-seqs "$max_c" --max-model-len $((INPUT_LEN + OUTPUT_LEN + 64)) \
    --disable-log-stats "${extra[@]}" >"$log" 2>&1 &
  SERVER_PID=$!
  wait_healthy "strata (config $i)" "$port" "$log"
  local common=(--base-url "http://127.0.0.1:$port" --dataset random --disable-tqdm
                --random-input-len "$INPUT_LEN" --temperature "$TEMPERATURE")
  "$STRATA" bench serve "${common[@]}" --num-prompts 1 --random-output-len 4 --seed 999 >/dev/null
  for c in $CONCURRENCY; do
    local n=$(( PROMPTS_PER_SLOT * c > 4 ? PROMPTS_PER_SLOT * c : 4 )) before after
    before="$(counters "$port")"
    echo "== round $round, config $i, concurrency $c, $n prompts" >&2
    "$STRATA" bench serve "${common[@]}" --random-output-len "$OUTPUT_LEN" --num-prompts "$n" \
      --max-concurrency "$c" --seed 3 --label "s$i" \
      --result-file "$WORK/results/r$round-s$i-c$c.json" | grep -E "Output token throughput" >&2
    after="$(counters "$port")"
    echo "$before $after" > "$WORK/results/r$round-s$i-c$c.counters"
  done
  stop_server
}

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), bandwidth before: $(bandwidth)" > "$WORK/results/machine.txt"
for round in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 "${#SPECS[@]}"); do run_server "$round" "$i"; done
done
echo "bandwidth after: $(bandwidth)" >> "$WORK/results/machine.txt"
cat "$WORK/results/machine.txt"

printf '%s\n' "${SPECS[@]}" > "$WORK/results/specs.txt"
"$PY" - "$WORK/results" "$CONCURRENCY" "$ROUNDS" "${#SPECS[@]}" "$MODEL" "$TEMPERATURE" <<'PYEOF'
import json, os, sys
results, levels, rounds, nspecs, model, temp = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
specs = open(os.path.join(results, "specs.txt")).read().splitlines()
def tput(r, i, c):
    with open(os.path.join(results, f"r{r}-s{i}-c{c}.json")) as f:
        return json.load(f)["output_throughput"]
print(f"{os.path.basename(model.rstrip('/'))}, temperature {temp}, output tok/s per round")
for i in range(1, nspecs + 1):
    print(f"config {i}: {specs[i - 1]}")
print(f"{'C':>3}  {'config':<8}{'tok/s per round':<28}{'spec/plain per round':<26}{'acceptance':>11}{'mean len':>10}")
for c in levels:
    for i in range(0, nspecs + 1):
        t = [tput(r, i, c) for r in range(1, rounds + 1)]
        ratio = "" if i == 0 else " / ".join(f"{x / tput(r + 1, 0, c):.2f}x" for r, x in enumerate(t))
        acc = ln = ""
        if i > 0:
            d = dt = a = 0
            for r in range(1, rounds + 1):
                d0, t0, a0, d1, t1, a1 = map(int, open(os.path.join(results, f"r{r}-s{i}-c{c}.counters")).read().split())
                d += d1 - d0; dt += t1 - t0; a += a1 - a0
            acc = f"{100.0 * a / dt:.1f}%" if dt else "no drafts"
            ln = f"{1 + a / d:.2f}" if d else "-"
        print(f"{c:>3}  {'plain' if i == 0 else str(i):<8}{' / '.join(f'{x:.1f}' for x in t):<28}{ratio:<26}{acc:>11}{ln:>10}")
PYEOF
