#!/usr/bin/env bash
# Strata's matmul kernels against oneDNN's and llama.cpp's, in one sitting, with the
# machine's read bandwidth measured before and after; prints a ratio table.
#
#   bench/kernels_vs_peers.sh [--threads N] [--work DIR] [--ops-bench BIN] [--min-time S]
#                             [--no-llama]
#
# What runs (all on weights that stream from DRAM for m = 1):
#   Strata   ops_bench BM_Matmul: own:0 = the product path, run twice: with the kernel
#            load-time calibration chooses for the shape on this host
#            (STRATA_BENCH_KERNEL=calibrated: the "Strata" column, with the kernel's name),
#            and with the static choice (our GEMVs for m <= 16, oneDNN in place per pool
#            thread for m > 16: the "static" column); own:1 = our kernels only (m > 16).
#            STRATA_NUM_THREADS=N.
#   oneDNN   ops_bench BM_Onednn: packed:0 = weight read in place, packed:1 = reordered
#            once into oneDNN's blocked layout (an extra weight copy). OMP_NUM_THREADS=N.
#   llama.cpp  its own micro-benchmark, `test-backend-ops perf -o MUL_MAT`, built from the
#            llama.cpp source bundled in npm node-llama-cpp (the same extraction as
#            bench/side_by_side.sh; -DLLAMA_BUILD_TESTS=ON, GGML_NATIVE=ON, target
#            test-backend-ops), cached under WORK.
#   read loop  ops_bench BM_MemRead (sum over 1 GiB), N threads, before and after the
#            whole run, and around each m = 1 GEMV in a last phase (below).
# Shapes: the Qwen2.5-0.5B linears (n x k: 896x896, 128x896, 4864x896, 896x4864,
# 151936x896) at m = 1 and m = 512 (no lm_head at 512), BF16, Q8_0 and F32 weights, plus
# 4096x14336, the one MUL_MAT weight test-backend-ops perf times for every type.
# test-backend-ops has no shape option: its perf cases are fixed (MUL_MAT m=4096, n=bs,
# k=14336 for bs in 1..8, 512). `-p` filters its cases by a regex over the params string,
# so this script selects type_a=bf16|q8_0|f32, type_b=f32, n=1|512 there, and compares
# llama.cpp with Strata and oneDNN on that shape only; the Qwen rows have no llama.cpp
# column. test-backend-ops also fixes its thread count at hardware_concurrency()/2 (no
# flag): the table says how many it used; a ratio against llama.cpp is shown only when
# that equals --threads.
# Ratios: Strata product / best peer (the faster of oneDNN in place, oneDNN packed and
# llama.cpp where measured), and for m = 1 the GEMV's weight GB/s / the read loop. On VMs
# whose bandwidth drifts by half within minutes, one before/after pair cannot stand for a
# whole run, so that ratio comes from a last phase: each m = 1 GEMV (the calibrated
# product path) again, between two read loops of its own, against their mean ("bracketed"
# columns). Rates are wall-clock (noisy on shared machines: repeat, and compare figures
# of one sitting only). Takes ~15 minutes on 2 cores (the bracketed phase ~7) after the
# one-time llama.cpp build (~5 minutes).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
THREADS=2
WORK="${TMPDIR:-/tmp}/strata-kernels-vs-peers"
OPS_BENCH="$ROOT/build/release/bench/micro/ops_bench"
MIN_TIME=0.3
LLAMA=1
JOBS="$(nproc)"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --ops-bench) OPS_BENCH="$2"; shift 2 ;;
    --min-time) MIN_TIME="$2"; shift 2 ;;
    --no-llama) LLAMA=0; shift ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -x "$OPS_BENCH" ]] || { echo "ops_bench not found at $OPS_BENCH (build release first)" >&2; exit 1; }
PY="${STRATA_REF_PYTHON:-/usr/bin/python3}"
source "$ROOT/bench/server_lib.sh"  # extract_llamacpp_source
mkdir -p "$WORK"
RUN="$WORK/run-$(date -u +%Y%m%dT%H%M%SZ)-t$THREADS"
mkdir -p "$RUN"

build_test_backend_ops() {
  local src="$WORK/llama.cpp" build="$WORK/llama-build-tests"
  TBO="$build/bin/test-backend-ops"
  [[ -x "$TBO" ]] && return 0
  # Reuse bench/side_by_side.sh's extracted source when it is there.
  if [[ ! -f "$src/CMakeLists.txt" && -f "${TMPDIR:-/tmp}/strata-side-by-side/llama.cpp/CMakeLists.txt" ]]; then
    src="${TMPDIR:-/tmp}/strata-side-by-side/llama.cpp"
  fi
  extract_llamacpp_source "$src"
  echo "building test-backend-ops in $build (-j$JOBS, once)" >&2
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=ON >"$WORK/llama-cmake.log" 2>&1 \
    || { cat "$WORK/llama-cmake.log" >&2; exit 1; }
  nice -n 19 cmake --build "$build" --target test-backend-ops -j "$JOBS" \
    >"$WORK/llama-build.log" 2>&1 || { tail -50 "$WORK/llama-build.log" >&2; exit 1; }
}

read_loop() {  # read_loop OUT.json
  STRATA_NUM_THREADS="$THREADS" "$OPS_BENCH" --benchmark_filter='^BM_MemRead' \
    --benchmark_min_time="$MIN_TIME" --benchmark_out="$1" --benchmark_out_format=json >/dev/null
}

[[ "$LLAMA" == 1 ]] && build_test_backend_ops
{ lscpu | grep -E "^(Model name|Vendor ID|CPU\(s\)|L3 cache)" | sed 's/:  */: /'
  grep -m2 -E "^(cpu family|model)[[:space:]]*:" /proc/cpuinfo | sed 's/[[:space:]]*:/:/'
} >"$RUN/lscpu.txt" || true
echo "[$(date -u +%H:%M:%S)] read loop (before), $THREADS threads" >&2
read_loop "$RUN/memread_before.json"
# dtype: 0 F32, 2 BF16, 3 Q8_0 (tensor::DType).
SHAPES='n:(896|128|4864|151936|4096)/k:(896|4864|14336)'
echo "[$(date -u +%H:%M:%S)] Strata ops_bench BM_Matmul (static choice)" >&2
STRATA_NUM_THREADS="$THREADS" "$OPS_BENCH" \
  --benchmark_filter="^BM_Matmul/dtype:(0|2|3)/m:(1|512)/$SHAPES/" \
  --benchmark_min_time="$MIN_TIME" --benchmark_out="$RUN/strata.json" \
  --benchmark_out_format=json >/dev/null
echo "[$(date -u +%H:%M:%S)] Strata ops_bench BM_Matmul (calibrated choice)" >&2
STRATA_BENCH_KERNEL=calibrated STRATA_NUM_THREADS="$THREADS" "$OPS_BENCH" \
  --benchmark_filter="^BM_Matmul/dtype:(0|2|3)/m:(1|512)/$SHAPES/own:0" \
  --benchmark_min_time="$MIN_TIME" --benchmark_out="$RUN/strata_calibrated.json" \
  --benchmark_out_format=json >/dev/null
echo "[$(date -u +%H:%M:%S)] oneDNN ops_bench BM_Onednn" >&2
OMP_NUM_THREADS="$THREADS" STRATA_NUM_THREADS="$THREADS" "$OPS_BENCH" \
  --benchmark_filter="^BM_Onednn/dtype:(0|2)/m:(1|512)/$SHAPES/" \
  --benchmark_min_time="$MIN_TIME" --benchmark_out="$RUN/onednn.json" \
  --benchmark_out_format=json >/dev/null
LLAMA_THREADS=0
if [[ "$LLAMA" == 1 ]]; then
  echo "[$(date -u +%H:%M:%S)] llama.cpp test-backend-ops perf -o MUL_MAT" >&2
  "$TBO" perf -o MUL_MAT -b CPU -p 'type_a=(bf16|q8_0|f32),type_b=f32,m=4096,n=(1|512),k=14336,' \
    >"$RUN/llama.txt" 2>&1 || { tail -20 "$RUN/llama.txt" >&2; exit 1; }
  LLAMA_THREADS=$(( $("$PY" -c 'import os; print(os.cpu_count())') / 2 ))
  (( LLAMA_THREADS < 1 )) && LLAMA_THREADS=1
fi
echo "[$(date -u +%H:%M:%S)] read loop (after)" >&2
read_loop "$RUN/memread_after.json"
echo "[$(date -u +%H:%M:%S)] each m = 1 GEMV between two read loops" >&2
mkdir -p "$RUN/bracketed"
for dt in 0 2 3; do
  for nk in 896x896 128x896 4864x896 896x4864 151936x896 4096x14336; do
    filter="^BM_Matmul/dtype:$dt/m:1/n:${nk%x*}/k:${nk#*x}/own:0/"
    # F32 and BF16 are not registered at every shape: skip what ops_bench does not list.
    STRATA_NUM_THREADS="$THREADS" "$OPS_BENCH" --benchmark_filter="$filter" \
      --benchmark_list_tests=true | grep -q BM_Matmul || continue
    read_loop "$RUN/bracketed/$dt-$nk-before.json"
    STRATA_BENCH_KERNEL=calibrated STRATA_NUM_THREADS="$THREADS" "$OPS_BENCH" \
      --benchmark_filter="$filter" --benchmark_min_time="$MIN_TIME" \
      --benchmark_out="$RUN/bracketed/$dt-$nk.json" --benchmark_out_format=json >/dev/null
    read_loop "$RUN/bracketed/$dt-$nk-after.json"
  done
done

"$PY" - "$RUN" "$THREADS" "$LLAMA_THREADS" <<'EOF'
import json, os, re, sys
run, threads, llama_threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
DT = {0: "F32", 2: "BF16", 3: "Q8_0"}
ELT = {"F32": 4.0, "BF16": 2.0, "Q8_0": 34.0 / 32.0}

def bench(path):
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        f = dict(kv.split(":") for kv in b["name"].split("/")[1:] if ":" in kv)
        key = (DT[int(f["dtype"])], int(f["m"]), int(f["n"]), int(f["k"]))
        out[(key, int(f.get("own", f.get("packed", 0))))] = b
    return out

def bench_dir(path):  # the bracketed phase: DTYPE-NxK.json between -before / -after
    for name in sorted(os.listdir(path)) if os.path.isdir(path) else []:
        if not re.fullmatch(r"\d+-\d+x\d+\.json", name):
            continue
        got = bench(os.path.join(path, name))
        if not got:
            continue
        stem = os.path.join(path, name[:-5])
        loop = (memread(stem + "-before.json") + memread(stem + "-after.json")) / 2
        for k, b in got.items():
            yield k, (rate(b, 1), loop)

def memread(path):
    return [b["bytes/s"] for b in json.load(open(path))["benchmarks"]][0] / 1e9

def rate(b, m):  # GB/s of weight (m = 1) or GFLOP/s
    return (b["weight_bytes/s"] if m == 1 else b["FLOP/s"]) / 1e9

strata = bench(os.path.join(run, "strata.json"))
calibrated = bench(os.path.join(run, "strata_calibrated.json"))
onednn = bench(os.path.join(run, "onednn.json"))
llama = {}
lp = os.path.join(run, "llama.txt")
if os.path.exists(lp):
    pat = re.compile(r"MUL_MAT\(type_a=(\w+),type_b=f32,m=(\d+),n=(\d+),k=(\d+),[^)]*\):\s+"
                     r"(\d+) runs -\s+([\d.]+) us/run")
    for line in open(lp):
        mm = pat.search(re.sub(r"\x1b\[[0-9;]*m", "", line))
        if not mm:
            continue
        t = {"bf16": "BF16", "q8_0": "Q8_0", "f32": "F32"}[mm.group(1)]
        n_w, m_x, k = int(mm.group(2)), int(mm.group(3)), int(mm.group(4))
        sec = float(mm.group(6)) * 1e-6
        r = (n_w * k * ELT[t] / sec if m_x == 1 else 2.0 * m_x * n_w * k / sec) / 1e9
        llama[(t, m_x, n_w, k)] = r
before, after = memread(os.path.join(run, "memread_before.json")), memread(os.path.join(run, "memread_after.json"))
bracketed = {}  # key -> (GEMV GB/s, mean read loop around it)
for (key, _), b in bench_dir(os.path.join(run, "bracketed")):
    bracketed[key] = b
cpu = open(os.path.join(run, "lscpu.txt")).read().strip().replace("\n", "; ")
print(f"# kernels vs peers, {threads} thread(s); {cpu}")
print(f"# read loop (BM_MemRead, {threads} threads): {before:.1f} GB/s before, {after:.1f} after"
      + (f"; llama.cpp test-backend-ops ran {llama_threads} thread(s)" if llama else ""))
if bracketed:
    loops = [v[1] for v in bracketed.values()]
    print(f"# bracketed m = 1 GEMVs: read loops around them {min(loops):.1f}-{max(loops):.1f} GB/s")
print("# m = 1: weight GB/s; m = 512: GFLOP/s. Strata = the product path with the kernel"
      " load-time calibration chose (named); static = without calibration."
      " ratio = Strata / best peer.")
hdr = ["type", "m", "n x k", "Strata", "kernel", "static", "own only", "oneDNN in place",
       "oneDNN packed", "llama.cpp", "ratio", "bracketed GEMV", "its read loop",
       "GEMV / read loop"]
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
fmt = lambda v: f"{v:.1f}" if v is not None else "-"
for t in ["BF16", "Q8_0", "F32"]:
    for m in [1, 512]:
        for n, k in [(896, 896), (128, 896), (4864, 896), (896, 4864), (151936, 896), (4096, 14336)]:
            key = (t, m, n, k)
            if (key, 0) not in strata:
                continue
            static = rate(strata[(key, 0)], m)
            cal = calibrated.get((key, 0))
            prod = rate(cal, m) if cal is not None else static
            label = cal.get("label", "") if cal is not None else ""
            kernel = label.split(" ")[1] if " " in label else "static"
            own = rate(strata[(key, 1)], m) if (key, 1) in strata else None
            inplace = rate(onednn[(key, 0)], m) if (key, 0) in onednn else None
            packed = rate(onednn[(key, 1)], m) if (key, 1) in onednn else None
            ll = llama.get(key)
            peers = [v for v in (inplace, packed) if v is not None]
            if ll is not None and llama_threads == threads:
                peers.append(ll)
            ratio = f"{prod / max(peers):.2f}x" if peers else "-"
            ll_s = fmt(ll) + ("" if ll is None or llama_threads == threads else f" ({llama_threads} thr)")
            br = bracketed.get(key) if m == 1 else None
            gemv = f"{100 * br[0] / br[1]:.0f}%" if br is not None else ""
            print(f"| {t} | {m} | {n}x{k} | {prod:.1f} | {kernel} | {static:.1f} | {fmt(own)}"
                  f" | {fmt(inplace)} | {fmt(packed)}"
                  f" | {ll_s} | {ratio} | {fmt(br[0] if br else None)}"
                  f" | {fmt(br[1] if br else None)} | {gemv} |")
print(f"# raw results in {run}")
EOF
