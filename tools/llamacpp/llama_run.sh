#!/usr/bin/env bash
# Run llama_run (see llama_run.c) against the prebuilt llama.cpp from npm.
#   tools/llamacpp/llama_run.sh logits MODEL.gguf OUT.bin IDS [--f16-kv]
#   tools/llamacpp/llama_run.sh bench MODEL.gguf PP TG REPS THREADS
#   tools/llamacpp/llama_run.sh quantize IN.gguf OUT.gguf FTYPE [THREADS]
#   tools/llamacpp/llama_run.sh dequant TYPE ROWS COLS SEED OUT.bin
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec "$LLAMA_RUN" "$@"
