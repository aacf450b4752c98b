#!/usr/bin/env bash
# Strata's dequantization and quantized-matmul kernels on blocks that llama.cpp itself
# quantized (ggml_quantize_chunk), against llama.cpp's own dequantization of them.
#   blocks_vs_llamacpp.sh WORK_DIR TENSOR_TEST OPS_TEST
# Writes one SQDQ file per type (tools/llamacpp/llama_run.c, "dequant" mode) into
# WORK_DIR, then runs the gtests that read them (STRATA_LLAMACPP_DEQUANT_DIR).
set -euo pipefail
work="$1"; tensor_test="$2"; ops_test="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run="$here/../../tools/llamacpp/llama_run.sh"
mkdir -p "$work"
# 37 rows x 1280 values: several super-blocks per row, rows with outliers, zeros and
# subnormal scales (see llama_run.c).
for t in q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs; do
  "$run" dequant "$t" 37 1280 11 "$work/$t.bin.tmp"
  mv "$work/$t.bin.tmp" "$work/$t.bin"
done
export STRATA_LLAMACPP_DEQUANT_DIR="$work"
# Each filter must run (not skip) exactly its tests: a renamed test must not pass silently.
check() {
  local want="$1"; shift
  local out
  out="$("$@" 2>&1)" || { echo "$out"; return 1; }
  echo "$out"
  grep -q "\[  PASSED  \] $want test" <<<"$out" && ! grep -q "SKIPPED" <<<"$out"
}
check 1 "$tensor_test" --gtest_filter='QuantBlocksVsLlamaCpp.*'
check 2 "$ops_test" --gtest_filter='*QuantMatmulVsLlamaCpp*'
