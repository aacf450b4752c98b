#!/usr/bin/env bash
# llama.cpp vs Strata on the same GGUF files: prompt processing (pp) and generation (tg)
# tokens/s for a random-weight model of Qwen2.5-0.5B's shape (hidden 896, 24 layers,
# 14 heads / 2 KV heads, FFN 4864, vocab 151936, tied) in bf16 and q8_0.
#
#   bench/llamacpp_vs_strata.sh [--strata BIN] [--work DIR] [--reps N] [--threads N]
#                               [--pp 512] [--tg 128] [--types "bf16 q8_0"]
#
# llama.cpp is the prebuilt library from npm (@node-llama-cpp/linux-x64, with its
# per-CPU ggml backends), driven by tools/llamacpp/llama_run.c (no llama-bench binary is
# shipped). Strata is run as `strata generate --bench --model M.gguf --threads N` and its
# stdout is searched for "pp<PP> <tok/s>" / "tg<TG> <tok/s>" (also "pp512: 123.4",
# "pp512=123.4"). Runs alternate engine by engine, rep by rep, so drift in machine load
# hits both alike; the table reports the median and min-max of the reps.
# Without --strata (or if BIN does not exist) only llama.cpp is measured.
# Note: on a shared machine use --threads 1: llama.cpp's threads spin at barriers and
# collapse when another process holds a core.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STRATA="$ROOT/build/release/apps/strata/strata"
WORK="${TMPDIR:-/tmp}/strata-bench"
REPS=3
THREADS=1
PP=512
TG=128
TYPES="bf16 q8_0"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --strata) STRATA="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --pp) PP="$2"; shift 2 ;;
    --tg) TG="$2"; shift 2 ;;
    --types) TYPES="$2"; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
PY="${STRATA_REF_PYTHON:-/usr/bin/python3}"
mkdir -p "$WORK"
HF="$WORK/qwen2.5-0.5b-bf16"
if [[ ! -f "$HF/model.safetensors" ]]; then
  echo "writing random-weight Qwen2.5-0.5B-shaped checkpoint (bf16, ~1 GB) to $HF" >&2
  "$PY" "$ROOT/tools/reference/make_checkpoint.py" --arch qwen2 --shape qwen2.5-0.5b \
    --dtype bf16 --seed 1 --out "$HF"
fi
for t in $TYPES; do
  if [[ ! -f "$WORK/qwen2.5-0.5b-$t.gguf" ]]; then
    echo "converting to GGUF $t with llama.cpp's convert_hf_to_gguf.py" >&2
    "$ROOT/tools/llamacpp/convert.sh" "$HF" "$WORK/qwen2.5-0.5b-$t.gguf.tmp" "$t"
    mv "$WORK/qwen2.5-0.5b-$t.gguf.tmp" "$WORK/qwen2.5-0.5b-$t.gguf"
  fi
done
have_strata=0
[[ -x "$STRATA" ]] && have_strata=1
[[ $have_strata == 1 ]] || echo "strata binary $STRATA not found: measuring llama.cpp only" >&2

RESULTS="$WORK/results.txt"
: >"$RESULTS"
extract() {  # extract KEY FILE -> median of the numbers following KEY (pp512 / tg128)
  local v
  v="$(grep -oE "$1[\"]?[:= ]+[0-9]+(\.[0-9]+)?" "$2" | grep -oE "[0-9]+(\.[0-9]+)?$" \
       | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}')"
  if [[ -z "$v" ]]; then
    echo "no '$1 <tok/s>' in $2:" >&2; cat "$2" >&2; exit 1
  fi
  echo "$v"
}
for rep in $(seq 1 "$REPS"); do
  for t in $TYPES; do
    gguf="$WORK/qwen2.5-0.5b-$t.gguf"
    out="$WORK/llama.out"
    "$ROOT/tools/llamacpp/llama_run.sh" bench "$gguf" "$PP" "$TG" 1 "$THREADS" >"$out"
    pp="$(extract "pp$PP" "$out")"; tg="$(extract "tg$TG" "$out")"
    echo "llama.cpp $t $pp $tg" | tee -a "$RESULTS" >&2
    if [[ $have_strata == 1 ]]; then
      out="$WORK/strata.out"
      "$STRATA" generate --bench --model "$gguf" --threads "$THREADS" >"$out" 2>"$WORK/strata.err" \
        || { cat "$WORK/strata.err" >&2; exit 1; }
      pp="$(extract "pp$PP" "$out")"; tg="$(extract "tg$TG" "$out")"
      echo "strata $t $pp $tg" | tee -a "$RESULTS" >&2
    fi
  done
done
"$PY" - "$RESULTS" "$PP" "$TG" "$THREADS" <<'PYEOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 4:
        rows.setdefault((parts[0], parts[1]), []).append((float(parts[2]), float(parts[3])))
pp, tg, threads = sys.argv[2], sys.argv[3], sys.argv[4]
print(f"{'engine':10s} {'type':5s} {'pp'+pp+' tok/s (min-max)':>28s} {'tg'+tg+' tok/s (min-max)':>28s}"
      f"   [{threads} thread(s)]")
for (engine, t), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    p = [a for a, _ in v]; g = [b for _, b in v]
    fmt = lambda x: f"{statistics.median(x):9.1f} ({min(x):.1f}-{max(x):.1f})"
    print(f"{engine:10s} {t:5s} {fmt(p):>28s} {fmt(g):>28s}")
PYEOF
