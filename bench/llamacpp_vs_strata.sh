#!/usr/bin/env bash
# llama.cpp vs Strata on the same GGUF files: prompt processing (pp) and generation (tg)
# tokens/s for a random-weight model of Qwen2.5-0.5B's shape (hidden 896, 24 layers,
# 14 heads / 2 KV heads, FFN 4864, vocab 151936, tied) in bf16 and q8_0, and optionally in
# llama-quantize types.
#
#   bench/llamacpp_vs_strata.sh [--strata BIN] [--work DIR] [--reps N] [--threads N]
#                               [--pp 512] [--tg 128] [--types "bf16 q8_0"]
#                               [--quant "Q4_K_M Q5_K_M Q6_K Q4_0"]
#                               [--shapes "qwen2.5-0.5b bench-small qwen3-moe-bench"]
#                               [--cpu avx2|avx2_vnni|avx512|avx512_vnni]
#
# --types are converter output types (convert_hf_to_gguf.py --outtype). --quant adds
# llama-quantize types: the bf16 GGUF is quantized with `tools/llamacpp/llama_run.sh quantize`
# (llama_model_quantize, llama-quantize's own code path, all cores), so the per-tensor mix is
# llama.cpp's. --shapes picks the models (make_checkpoint.py --shape); it defaults to
# qwen2.5-0.5b, plus bench-small (hidden 512, 8 layers, FFN 1536, vocab 8192: every matmul
# input a multiple of 256, so K-quants apply to every tensor, where Qwen2.5-0.5B's hidden 896
# sends most tensors to llama.cpp's Q5_0 / Q5_1 / Q8_0 / IQ4_NL fallbacks) when --quant is
# given. Example:
#   bench/llamacpp_vs_strata.sh --quant "Q4_K_M Q5_K_M Q6_K Q4_0"
#
# llama.cpp is the prebuilt library from npm (@node-llama-cpp/linux-x64, with its
# per-CPU ggml backends), driven by tools/llamacpp/llama_run.c (no llama-bench binary is
# shipped). Strata is run as `strata generate --bench --model M.gguf --threads N
# --bench-prompt-tokens PP --bench-gen-tokens TG --bench-repetitions 1` and its stdout is
# searched for "pp<PP> <tok/s>" / "tg<TG> <tok/s>" (also "pp512: 123.4", "pp512=123.4").
# Runs alternate engine by engine, rep by rep, so drift in machine load hits both alike; the
# table reports the median and min-max of the reps, plus the weight bandwidth of decode:
# tg tok/s x the weight bytes one decode step reads (every matmul weight + the output/tied
# embedding matrix + one embedding row, as stored in the GGUF; Strata prints its own figure,
# which also counts its in-memory layout). The machine's read bandwidth (ops_bench
# BM_MemRead, bench/server_lib.sh) is measured before and after.
# Without --strata (or if BIN does not exist) only llama.cpp is measured.
# --cpu avx2 runs both engines' AVX2 code on an AVX-512 machine, as on a CPU without AVX-512
# (Zen 2/3, Intel client cores): Strata with STRATA_CPU=avx2 (its avx2 kernel table), llama.cpp
# with only ggml's "haswell" CPU variant (AVX2 + FMA + F16C) in its backend folder, the one it
# picks on such CPUs. Same memory system as the host, so not a measurement of an AVX2 host's
# bandwidth; a check that each engine's AVX2 code keeps up with the other's.
# --cpu avx512_vnni does the same for AVX-512 CPUs without AVX512-BF16 (Cascade Lake, Ice
# Lake): Strata with STRATA_CPU=avx512_vnni (its avx512_vnni table) and oneDNN capped at
# ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI (what it dispatches to there), llama.cpp with only its
# "icelake" variant (AVX-512 F/BW/VL/VBMI + VNNI, no BF16).
# --cpu avx2_vnni: AVX2 + AVX-VNNI without AVX-512 (Alder Lake and later Intel client cores):
# Strata's avx2_vnni table, llama.cpp's "alderlake" variant (the host needs AVX-VNNI).
# --cpu avx512: AVX-512 without VNNI (Skylake-SP): Strata's avx2 table (what it runs there),
# llama.cpp's "skylakex" variant.
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
QUANT=""
SHAPES=""
CPU=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --strata) STRATA="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --pp) PP="$2"; shift 2 ;;
    --tg) TG="$2"; shift 2 ;;
    --types) TYPES="$2"; shift 2 ;;
    --quant) QUANT="$2"; shift 2 ;;
    --shapes) SHAPES="$2"; shift 2 ;;
    --cpu) CPU="$2"; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
if [[ -z "$SHAPES" ]]; then
  SHAPES="qwen2.5-0.5b"
  [[ -n "$QUANT" ]] && SHAPES="qwen2.5-0.5b bench-small"
fi
PY="${STRATA_REF_PYTHON:-/usr/bin/python3}"
if [[ -n "$CPU" ]]; then
  case "$CPU" in
    avx2) LLAMA_VARIANT=haswell; STRATA_TABLE=avx2 ;;
    avx2_vnni) LLAMA_VARIANT=alderlake; STRATA_TABLE=avx2_vnni ;;
    avx512) LLAMA_VARIANT=skylakex; STRATA_TABLE=avx2 ;;
    avx512_vnni) LLAMA_VARIANT=icelake; STRATA_TABLE=avx512_vnni; export ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI ;;
    *) echo "--cpu: avx2, avx2_vnni, avx512 or avx512_vnni" >&2; exit 2 ;;
  esac
  export STRATA_CPU="$STRATA_TABLE"
  bins="$ROOT/tools/llamacpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
  "$ROOT/tools/llamacpp/llama_run.sh" 2>/dev/null || true  # installs and builds llama_run if needed
  export STRATA_LLAMA_BACKEND_DIR="$WORK/llama-backends-$CPU"
  rm -rf "$STRATA_LLAMA_BACKEND_DIR"
  mkdir -p "$STRATA_LLAMA_BACKEND_DIR"
  for f in "$bins"/*; do
    case "$(basename "$f")" in
      "libggml-cpu-$LLAMA_VARIANT.so") ln -s "$f" "$STRATA_LLAMA_BACKEND_DIR/" ;;
      libggml-cpu-*) ;;
      *) ln -s "$f" "$STRATA_LLAMA_BACKEND_DIR/" ;;
    esac
  done
fi
source "$ROOT/bench/server_lib.sh"  # bandwidth()
mkdir -p "$WORK"

ensure_hf() {  # ensure_hf SHAPE -> the bf16 checkpoint directory
  local hf="$WORK/$1-bf16"
  if [[ ! -f "$hf/model.safetensors" ]]; then
    echo "writing random-weight $1-shaped checkpoint (bf16) to $hf" >&2
    local arch=qwen2
    [[ "$1" == qwen3-moe-bench ]] && arch=qwen3-moe  # the mixture-of-experts shapes
    [[ "$1" == qwen2-moe-bench ]] && arch=qwen2-moe
    "$PY" "$ROOT/tools/reference/make_checkpoint.py" --arch "$arch" --shape "$1" \
      --dtype bf16 --seed 1 --out "$hf"
  fi
  echo "$hf"
}
ensure_converted() {  # ensure_converted SHAPE TYPE: llama.cpp's converter, --outtype TYPE
  local out="$WORK/$1-$2.gguf"
  if [[ ! -f "$out" ]]; then
    local hf
    hf="$(ensure_hf "$1")"
    echo "converting $1 to GGUF $2 with llama.cpp's convert_hf_to_gguf.py" >&2
    "$ROOT/tools/llamacpp/convert.sh" "$hf" "$out.tmp" "$2"
    mv "$out.tmp" "$out"
  fi
}
ensure_quantized() {  # ensure_quantized SHAPE FTYPE: llama-quantize's mix from the bf16 GGUF
  local out="$WORK/$1-$2.gguf"
  if [[ ! -f "$out" ]]; then
    ensure_converted "$1" bf16
    echo "quantizing $1 to $2 with llama_model_quantize" >&2
    "$ROOT/tools/llamacpp/llama_run.sh" quantize "$WORK/$1-bf16.gguf" "$out.tmp" "$2" 0
    mv "$out.tmp" "$out"
  fi
}
for s in $SHAPES; do
  for t in $TYPES; do ensure_converted "$s" "$t"; done
  for q in $QUANT; do ensure_quantized "$s" "$q"; done
done

# Bytes of weights one decode step reads, from the GGUF's tensor table: every 2-D weight
# except the embedding table (a row lookup) unless it doubles as the tied output matrix.
decode_bytes() {
  "$PY" - "$1" "$ROOT/tools/reference" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[2])
import gguf_io
_, infos = gguf_io.read_infos(sys.argv[1])
names = {n for n, _, _, _ in infos}
total = 0
for name, ne, ttype, _ in infos:
    if len(ne) < 2:
        continue
    n = ne[0] * ne[1]
    if ttype in gguf_io.QUANT_TYPES:
        size = gguf_io.quant_nbytes(ttype, n)
    else:
        size = n * {gguf_io.GGML_F32: 4, gguf_io.GGML_F16: 2, gguf_io.GGML_BF16: 2}[ttype]
    if name == "token_embd.weight" and "output.weight" in names:
        size //= ne[1]  # one row
    total += size
print(total)
PYEOF
}

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
gbps() { awk -v t="$1" -v b="$2" 'BEGIN {printf "%.2f", t * b / 1e9}'; }
echo "bandwidth before: $(bandwidth)" >"$WORK/machine.txt"
declare -A BYTES
for s in $SHAPES; do
  for t in $TYPES $QUANT; do BYTES[$s-$t]="$(decode_bytes "$WORK/$s-$t.gguf")"; done
done
for rep in $(seq 1 "$REPS"); do
  for s in $SHAPES; do
    for t in $TYPES $QUANT; do
      gguf="$WORK/$s-$t.gguf"
      out="$WORK/llama.out"
      "$ROOT/tools/llamacpp/llama_run.sh" bench "$gguf" "$PP" "$TG" 1 "$THREADS" >"$out"
      pp="$(extract "pp$PP" "$out")"; tg="$(extract "tg$TG" "$out")"
      echo "llama.cpp $s $t $pp $tg $(gbps "$tg" "${BYTES[$s-$t]}")" | tee -a "$RESULTS" >&2
      if [[ $have_strata == 1 ]]; then
        out="$WORK/strata.out"
        "$STRATA" generate --bench --model "$gguf" --threads "$THREADS" \
          --bench-prompt-tokens "$PP" --bench-gen-tokens "$TG" --bench-repetitions 1 \
          >"$out" 2>"$WORK/strata.err" || { cat "$WORK/strata.err" >&2; exit 1; }
        pp="$(extract "pp$PP" "$out")"; tg="$(extract "tg$TG" "$out")"
        echo "strata $s $t $pp $tg $(gbps "$tg" "${BYTES[$s-$t]}")" | tee -a "$RESULTS" >&2
      fi
    done
  done
done
echo "bandwidth after: $(bandwidth)" >>"$WORK/machine.txt"
"$PY" - "$RESULTS" "$PP" "$TG" "$THREADS" <<'PYEOF'
import statistics, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 6:
        key = tuple(parts[:3])
        if key[1:] not in order:
            order.append(key[1:])
        rows.setdefault(key, []).append(tuple(map(float, parts[3:])))
pp, tg, threads = sys.argv[2], sys.argv[3], sys.argv[4]
print(f"{'engine':10s} {'model':13s} {'type':7s} {'pp'+pp+' tok/s (min-max)':>28s} "
      f"{'tg'+tg+' tok/s (min-max)':>28s} {'decode weights GB/s':>20s}   [{threads} thread(s)]")
for shape, t in order:
    for engine in ("llama.cpp", "strata"):
        v = rows.get((engine, shape, t))
        if not v:
            continue
        fmt = lambda x: f"{statistics.median(x):9.1f} ({min(x):.1f}-{max(x):.1f})"  # noqa: E731
        print(f"{engine:10s} {shape:13s} {t:7s} {fmt([a for a, _, _ in v]):>28s} "
              f"{fmt([b for _, b, _ in v]):>28s} {statistics.median([c for _, _, c in v]):20.2f}")
PYEOF
[[ -z "$CPU" ]] || echo "# --cpu $CPU: Strata with STRATA_CPU=$STRATA_TABLE, llama.cpp with only its ggml-cpu-$LLAMA_VARIANT"
sed 's/^/# /' "$WORK/machine.txt"
