# Sourced by the tools/llamacpp scripts: installs the pinned npm packages if needed,
# extracts llama.cpp's source (converter, gguf-py, headers) from the git bundle that
# node-llama-cpp ships, and builds llama_run against the prebuilt libllama.
# Everything generated lives under node_modules/ (git-ignored).
# Sets: LLAMACPP_DIR, LLAMA_SRC, LLAMA_BINS, LLAMA_RUN, REF_PYTHON.
set -euo pipefail
LLAMACPP_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REF_PYTHON="${STRATA_REF_PYTHON:-/usr/bin/python3}"
NM="$LLAMACPP_DIR/node_modules"
# Serialize setup across concurrent callers (ctest -j runs several GGUF cases at once).
exec {strata_setup_fd}>"${TMPDIR:-/tmp}/strata-llamacpp-setup.lock"
flock "$strata_setup_fd"
if [[ ! -d "$NM/node-llama-cpp" || ! -d "$NM/@node-llama-cpp/linux-x64" ]]; then
  # `npm ci` refuses this lock here: the registry mirror lacks the mac/win/riscv optional
  # platform packages. `install --no-save` honours the lock and leaves it untouched.
  (cd "$LLAMACPP_DIR" && npm install --no-save --ignore-scripts --omit=optional --no-audit \
     --no-fund >&2)
fi
BUNDLE="$NM/node-llama-cpp/llama/gitRelease.bundle"
LLAMA_BINS="$NM/@node-llama-cpp/linux-x64/bins/linux-x64"
LLAMA_SRC="$NM/.strata/llama.cpp"
LLAMA_RUN="$NM/.strata/llama_run"
export LLAMA_BINS
if [[ ! -f "$LLAMA_SRC/.extracted" || "$LLAMA_SRC/.extracted" -ot "$BUNDLE" ]]; then
  rm -rf "$LLAMA_SRC" "$LLAMA_SRC.git"
  mkdir -p "$LLAMA_SRC"
  git init -q --bare "$LLAMA_SRC.git"
  git -C "$LLAMA_SRC.git" fetch -q "$BUNDLE" HEAD
  git -C "$LLAMA_SRC.git" archive FETCH_HEAD convert_hf_to_gguf.py conversion gguf-py \
    include ggml/include LICENSE | tar -x -C "$LLAMA_SRC"
  rm -rf "$LLAMA_SRC.git"
  touch "$LLAMA_SRC/.extracted"
fi
if [[ ! -x "$LLAMA_RUN" || "$LLAMA_RUN" -ot "$LLAMACPP_DIR/llama_run.c" ]]; then
  "${CC:-cc}" -O2 -Wall -Wextra -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" \
    "$LLAMACPP_DIR/llama_run.c" -o "$LLAMA_RUN" -L"$LLAMA_BINS" \
    -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -lm -Wl,-rpath,"$LLAMA_BINS"
fi
flock -u "$strata_setup_fd"
# STRATA_LLAMA_BACKEND_DIR: where llama_run loads ggml's backends from instead (a folder
# holding one CPU variant pins llama.cpp to it; bench/llamacpp_vs_strata.sh --cpu avx2).
if [[ -n "${STRATA_LLAMA_BACKEND_DIR:-}" ]]; then export LLAMA_BINS="$STRATA_LLAMA_BACKEND_DIR"; fi
