# Shared by the side-by-side benchmark scripts (sourced, not run): a free
# loopback port, waiting until a server answers /health, stopping it, the read
# bandwidth, llama.cpp's source out of the npm bundle.
# Needs $PY (a python3) and $ROOT; sets/uses SERVER_PID.

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

SERVER_PID=""
stop_server() {  # SIGTERM, up to 10 s, then SIGKILL
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}

wait_healthy() {  # wait_healthy NAME PORT LOG: up to 5 minutes for $SERVER_PID
  local name="$1" port="$2" log="$3"
  for _ in $(seq 1 1200); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then return 0; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$log" >&2; echo "$name exited" >&2; exit 1; }
    sleep 0.25
  done
  cat "$log" >&2
  echo "$name did not become healthy" >&2
  exit 1
}

bandwidth() {  # the machine's read bandwidth now (ops_bench BM_MemRead, 2 threads), or n/a
  local ops_bench="${OPS_BENCH:-$ROOT/build/release/bench/micro/ops_bench}"
  [[ -x "$ops_bench" ]] || { echo "n/a"; return; }
  "$ops_bench" --benchmark_filter='BM_MemRead' --benchmark_min_time=0.3 2>/dev/null |
    sed -n 's/.*bytes\/s=\([0-9.]*\)G\/s.*/\1 GB\/s/p' | head -1
}

extract_llamacpp_source() {  # extract_llamacpp_source DIR: llama.cpp's full source tree into DIR
  # (from the git bundle the npm package node-llama-cpp ships), unless DIR already has it.
  local src="$1"
  [[ -f "$src/CMakeLists.txt" ]] && return 0
  local bundle="$ROOT/tools/llamacpp/node_modules/node-llama-cpp/llama/gitRelease.bundle"
  [[ -f "$bundle" ]] || source "$ROOT/tools/llamacpp/env.sh"  # npm install of the pinned package
  echo "extracting llama.cpp from $bundle" >&2
  rm -rf "$src" "$src.git" && mkdir -p "$src"
  git init -q --bare "$src.git"
  git -C "$src.git" fetch -q "$bundle" HEAD
  git -C "$src.git" archive FETCH_HEAD | tar -x -C "$src"
  rm -rf "$src.git"
}
