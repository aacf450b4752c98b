#!/usr/bin/env bash
# Every serving workload against llama.cpp's llama-server, in one sitting and one command:
#   1. random 256 in / 128 out at 1, 4 and 16 streams, Qwen2.5-0.5B shape (BF16 GGUF)
#   2. the same on bench-small (make_checkpoint.py --shape bench-small, BF16 GGUF)
#   3. decode-heavy: random 32 in / 512 out at 16 streams, Qwen2.5-0.5B shape
#   4. multi-turn chat, 16 and 32 conversations, bench-small, the same host-memory budget
#      for reused KV on both sides (bench/multi_turn_side_by_side.sh)
# Each part is one of the side-by-side scripts (bench/side_by_side.sh,
# bench/multi_turn_side_by_side.sh), which alternate the two engines on the identical
# file with the same client; each prints its ratio table, and all tables, the machine's
# read bandwidth before and after, and the time of day go to $WORK/all/summary.txt.
#
#   bench/serving_vs_llama_server.sh [--work DIR] [--strata BIN] [--threads N]
#       [--parts "random-qwen random-small decode multi-turn"]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK=/tmp/strata-side-by-side
STRATA="$ROOT/build/release/apps/strata/strata"
THREADS="$(nproc)"
PARTS="random-qwen random-small decode multi-turn"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) WORK="$2"; shift 2 ;;
    --strata) STRATA="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --parts) PARTS="$2"; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
source "$ROOT/bench/server_lib.sh"
OUT="$WORK/all"
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
has() { [[ " $PARTS " == *" $1 "* ]]; }

# llama-server and the Qwen-shape GGUF (built once, reused by every part).
bash "$ROOT/bench/side_by_side.sh" --work "$WORK" --build-only >&2
LLAMA_SERVER="$WORK/llama-build/bin/llama-server"
QWEN_GGUF="$WORK/qwen2.5-0.5b-bf16.gguf"
SMALL_GGUF="$WORK/bench-small-bf16.gguf"
if [[ ! -f "$SMALL_GGUF" ]]; then  # the model multi_turn_side_by_side.sh uses by default
  [[ -f "$WORK/bench-small-bf16/config.json" ]] ||
    "${STRATA_REF_PYTHON:-/usr/bin/python3}" "$ROOT/tools/reference/make_checkpoint.py" \
      --arch qwen2 --shape bench-small --dtype bf16 --seed 1 --out "$WORK/bench-small-bf16"
  "$ROOT/tools/llamacpp/convert.sh" "$WORK/bench-small-bf16" "$SMALL_GGUF.tmp" bf16
  mv "$SMALL_GGUF.tmp" "$SMALL_GGUF"
fi

{
  echo "# serving vs llama-server, $(date -u '+%Y-%m-%d %H:%M UTC'), $THREADS thread(s)"
  echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); strata $("$STRATA" --version)"
  echo "# bandwidth before: $(bandwidth)"
} > "$SUMMARY"

random_part() {  # random_part NAME GGUF INPUT OUTPUT "CONCURRENCY"
  local name="$1" gguf="$2" inp="$3" out="$4" conc="$5"
  echo "== $name: $(basename "$gguf"), $inp in / $out out, streams $conc" >&2
  {
    echo
    echo "## $name ($(date -u '+%H:%M UTC'))"
    bash "$ROOT/bench/side_by_side.sh" --work "$OUT/$name" --strata "$STRATA" --gguf "$gguf" \
      --llama-server "$LLAMA_SERVER" --threads "$THREADS" --input-len "$inp" \
      --output-len "$out" --concurrency "$conc" 2>"$OUT/$name.log"
  } | tee -a "$SUMMARY"
}

has random-qwen && random_part random-qwen "$QWEN_GGUF" 256 128 "1 4 16"
has random-small && random_part random-small "$SMALL_GGUF" 256 128 "1 4 16"
has decode && random_part decode "$QWEN_GGUF" 32 512 "16"
if has multi-turn; then
  echo "== multi-turn: $(basename "$SMALL_GGUF"), 16 and 32 conversations" >&2
  {
    echo
    echo "## multi-turn ($(date -u '+%H:%M UTC'))"
    bash "$ROOT/bench/multi_turn_side_by_side.sh" --work "$WORK" --strata "$STRATA" \
      --gguf "$SMALL_GGUF" --llama-server "$LLAMA_SERVER" --threads "$THREADS" \
      --conversations "16 32" 2>"$OUT/multi-turn.log"
  } | tee -a "$SUMMARY"
fi
echo "# bandwidth after: $(bandwidth)" >> "$SUMMARY"
echo "summary: $SUMMARY" >&2
