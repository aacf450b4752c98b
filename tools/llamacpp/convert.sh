#!/usr/bin/env bash
# Convert a Hugging Face model directory to GGUF with llama.cpp's own
# convert_hf_to_gguf.py (taken from the llama.cpp source node-llama-cpp ships).
#   tools/llamacpp/convert.sh HF_DIR OUT.gguf f32|f16|bf16|q8_0
# Runs on Debian's python3 with python3-torch, python3-numpy, python3-yaml; see
# convert_driver.py for the shims that replace transformers/tqdm/sentencepiece.
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 HF_DIR OUT.gguf f32|f16|bf16|q8_0" >&2
  exit 2
fi
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
log="$(mktemp)"
if ! "$REF_PYTHON" "$LLAMACPP_DIR/convert_driver.py" "$LLAMA_SRC" "$1" \
      --outtype "$3" --outfile "$2" >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
