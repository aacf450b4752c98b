#!/usr/bin/env bash
# Builds Strata's libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and
# runs each for SECONDS with its committed seed corpus fuzz/corpus/<target>/.
# New inputs and crash reproducers go to a scratch dir (build-fuzz/fuzz-out/
# <target>/), never into the committed corpus; minimise interesting ones by
# hand before committing them.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 600 s, every target)
#   e.g. scripts/fuzz.sh 30 fuzz_chunk_header fuzz_p2p_protocol
# Prints one line per target: runs, execs/s, crashes (exit 1 if any crashed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh --with-fuzz  # clang, libclang-rt-14-dev besides the usual
seconds="${1:-600}"
shift || true
all_targets=(fuzz_kv_transfer_config fuzz_chunk_header fuzz_s3_response fuzz_p2p_protocol
             fuzz_openai_request fuzz_chat_template fuzz_safetensors_header
             fuzz_safetensors_index fuzz_gguf fuzz_tokenizer_json fuzz_gbnf fuzz_json_schema
             fuzz_tool_parsers)
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then targets=("${all_targets[@]}"); fi

build_dir=build-fuzz
san_flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
san_flags+=" -fno-omit-frame-pointer -Wno-unknown-warning-option"
# Tests stay on: STRATA_BUILD_TESTS=OFF does not configure yet (src/engine,
# apps/strata); only the fuzz targets below are built.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$san_flags" -DCMAKE_C_FLAGS="$san_flags" \
  -DSTRATA_FUZZ=ON -DSTRATA_BUILD_TESTS=ON -DSTRATA_BUILD_BENCH=OFF -DSTRATA_WERROR=OFF >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"

out_root="$build_dir/fuzz-out"
summary=()
num_crashed=0
for target in "${targets[@]}"; do
  out="$out_root/$target"
  # Artifacts of earlier runs would be counted as this run's crashes.
  rm -rf "$out/artifacts"
  mkdir -p "$out/new" "$out/artifacts"
  log="$out/fuzz.log"
  # Run a copy so that rebuilding build-fuzz/ during a long run is safe.
  cp "$build_dir/fuzz/$target" "$out/$target"
  status=0
  # The scratch dir comes first: libFuzzer adds new inputs to the first corpus dir.
  UBSAN_OPTIONS=print_stacktrace=1 "$out/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/" "$out/new" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  execs=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  crashes=$(find "$out/artifacts" -type f | wc -l)
  if [[ $status -ne 0 || $crashes -ne 0 ]]; then num_crashed=$((num_crashed + 1)); fi
  summary+=("$(printf '%-26s %6ss  runs=%-10s execs/s=%-8s crashes=%s exit=%s log=%s' \
    "$target" "$seconds" "$runs" "$execs" "$crashes" "$status" "$log")")
done
printf '%s\n' "${summary[@]}"
[[ $num_crashed -eq 0 ]]
