#!/usr/bin/env bash
# Side by side: `strata serve` and llama.cpp's `llama-server` on the identical GGUF file,
# both driven by the same `strata bench serve` random workload (token-id prompts, ignore_eos,
# same seed), one run per concurrency level; prints one table with Strata / llama.cpp ratios.
#
#   bench/side_by_side.sh [--strata BIN] [--gguf FILE.gguf] [--type bf16|q8_0|f16|f32]
#                         [--work DIR] [--concurrency "1 4 16"] [--input-len 256]
#                         [--output-len 128] [--prompts-per-slot 2] [--threads N] [--jobs N]
#                         [--llama-server BIN] [--build-only]
#
# llama-server is built here from the llama.cpp source that the npm package node-llama-cpp
# ships as a git bundle (tools/llamacpp/node_modules/node-llama-cpp/llama/gitRelease.bundle),
# into $WORK (default /tmp/strata-side-by-side), never into the product's build tree: no web
# UI, no OpenSSL, GGML_NATIVE. It gets its best settings: flash attention (`-fa on`),
# `--parallel C` slots and a context of C x (input + output + 64) tokens.
# Without --gguf the model is a random-weight checkpoint of Qwen2.5-0.5B's shape, converted
# with llama.cpp's own convert_hf_to_gguf.py (tools/llamacpp/convert.sh), as in
# bench/llamacpp_vs_strata.sh. Each level sends max(4, prompts-per-slot x C) prompts after one
# unmeasured warm-up request with a different seed. Both engines get --threads N (default:
# all cores); on a shared machine other processes skew both. --build-only builds llama-server
# (at nice 19) and the GGUF file, then stops.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STRATA="$ROOT/build/release/apps/strata/strata"
WORK="${TMPDIR:-/tmp}/strata-side-by-side"
GGUF=""
TYPE=bf16
CONCURRENCY="1 4 16"
INPUT_LEN=256
OUTPUT_LEN=128
PROMPTS_PER_SLOT=2
THREADS="$(nproc)"
JOBS=2
LLAMA_SERVER=""
BUILD_ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --strata) STRATA="$2"; shift 2 ;;
    --gguf) GGUF="$2"; shift 2 ;;
    --type) TYPE="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --input-len) INPUT_LEN="$2"; shift 2 ;;
    --output-len) OUTPUT_LEN="$2"; shift 2 ;;
    --prompts-per-slot) PROMPTS_PER_SLOT="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --llama-server) LLAMA_SERVER="$2"; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
PY="${STRATA_REF_PYTHON:-/usr/bin/python3}"
source "$ROOT/bench/server_lib.sh"
[[ -x "$STRATA" ]] || { echo "strata binary $STRATA not found (build the strata target)" >&2; exit 1; }
mkdir -p "$WORK/results"

build_llama_server() {
  local src="$WORK/llama.cpp" build="$WORK/llama-build"
  LLAMA_SERVER="$build/bin/llama-server"
  [[ -x "$LLAMA_SERVER" ]] && return 0
  extract_llamacpp_source "$src"
  echo "building llama-server in $build (-j$JOBS; takes a while on few cores)" >&2
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON \
    >"$WORK/llama-cmake.log" 2>&1 || { cat "$WORK/llama-cmake.log" >&2; exit 1; }
  nice -n 19 cmake --build "$build" --target llama-server -j "$JOBS" >"$WORK/llama-build.log" 2>&1 \
    || { tail -50 "$WORK/llama-build.log" >&2; exit 1; }
}

make_model() {
  [[ -n "$GGUF" ]] && return 0
  local hf="$WORK/qwen2.5-0.5b-bf16"
  GGUF="$WORK/qwen2.5-0.5b-$TYPE.gguf"
  [[ -f "$GGUF" ]] && return 0
  if [[ ! -f "$hf/model.safetensors" ]]; then
    echo "writing random-weight Qwen2.5-0.5B-shaped checkpoint (bf16) to $hf" >&2
    "$PY" "$ROOT/tools/reference/make_checkpoint.py" --arch qwen2 --shape qwen2.5-0.5b \
      --dtype bf16 --seed 1 --out "$hf"
  fi
  echo "converting to GGUF $TYPE with llama.cpp's convert_hf_to_gguf.py" >&2
  "$ROOT/tools/llamacpp/convert.sh" "$hf" "$GGUF.tmp" "$TYPE"
  mv "$GGUF.tmp" "$GGUF"
}

trap stop_server EXIT

start_server() {  # start_server ENGINE C PORT LOG
  local engine="$1" c="$2" port="$3" log="$4"
  if [[ "$engine" == strata ]]; then
    "$STRATA" serve "$GGUF" --host 127.0.0.1 --port "$port" --threads "$THREADS" \
      --max-num-seqs "$c" --disable-log-stats >"$log" 2>&1 &
  else
    "$LLAMA_SERVER" -m "$GGUF" --host 127.0.0.1 --port "$port" -fa on --parallel "$c" \
      -c $((c * (INPUT_LEN + OUTPUT_LEN + 64))) --threads "$THREADS" \
      --threads-batch "$THREADS" --no-webui >"$log" 2>&1 &
  fi
  SERVER_PID=$!
  wait_healthy "$engine" "$port" "$log"
}

run_level() {  # run_level ENGINE C
  local engine="$1" c="$2" port n
  port="$(free_port)"
  n=$(( PROMPTS_PER_SLOT * c > 4 ? PROMPTS_PER_SLOT * c : 4 ))
  start_server "$engine" "$c" "$port" "$WORK/results/$engine-c$c.log"
  local common=(--base-url "http://127.0.0.1:$port" --dataset random --disable-tqdm
                --random-input-len "$INPUT_LEN")
  "$STRATA" bench serve "${common[@]}" --num-prompts 1 --random-output-len 4 --seed 999 \
    >/dev/null  # warm-up: a prompt the measured run does not share
  echo "== $engine, concurrency $c, $n prompts" >&2
  "$STRATA" bench serve "${common[@]}" --random-output-len "$OUTPUT_LEN" --num-prompts "$n" \
    --max-concurrency "$c" --seed 0 --label "$engine" \
    --result-file "$WORK/results/$engine-c$c.json" | grep -E "throughput|Mean|Failed" >&2
  stop_server
}

make_model
[[ -n "$LLAMA_SERVER" ]] || build_llama_server
if [[ $BUILD_ONLY == 1 ]]; then
  echo "built $LLAMA_SERVER; model $GGUF" >&2
  exit 0
fi
echo "model $GGUF, $THREADS thread(s), ${INPUT_LEN} in / ${OUTPUT_LEN} out" >&2
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), bandwidth before: $(bandwidth)" > "$WORK/results/machine.txt"
for c in $CONCURRENCY; do
  run_level strata "$c"
  run_level llama.cpp "$c"
done
echo "bandwidth after: $(bandwidth)" >> "$WORK/results/machine.txt"
cat "$WORK/results/machine.txt"

"$PY" - "$WORK/results" "$CONCURRENCY" "$THREADS" "$INPUT_LEN" "$OUTPUT_LEN" "$GGUF" <<'PYEOF'
import json, os, sys
results, levels, threads, inp, out, gguf = sys.argv[1], sys.argv[2].split(), *sys.argv[3:]
cols = [("request_throughput", "req/s"), ("output_throughput", "out tok/s"),
        ("mean_ttft_ms", "mean TTFT ms"), ("median_ttft_ms", "med TTFT ms"),
        ("mean_tpot_ms", "mean TPOT ms"), ("mean_e2el_ms", "mean E2EL ms")]
print(f"{os.path.basename(gguf)}: {inp} in / {out} out tokens, {threads} thread(s), "
      "strata bench serve --dataset random")
print(f"{'conc':>4}  {'engine':<16}" + "".join(f"{h:>14}" for _, h in cols) + f"{'failed':>8}")
for c in levels:
    r = {}
    for engine in ("strata", "llama.cpp"):
        with open(os.path.join(results, f"{engine}-c{c}.json")) as f:
            r[engine] = json.load(f)
        row = "".join(f"{r[engine][k]:14.2f}" for k, _ in cols)
        print(f"{c:>4}  {engine:<16}{row}{r[engine]['failed']:8d}")
    ratio = "".join(f"{(r['strata'][k] / r['llama.cpp'][k]) if r['llama.cpp'][k] else float('nan'):13.2f}x"
                    for k, _ in cols)
    print(f"{c:>4}  {'strata/llama.cpp':<16}{ratio}")
PYEOF
