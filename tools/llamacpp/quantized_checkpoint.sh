#!/usr/bin/env bash
# A random-weight checkpoint quantized by llama.cpp itself, for tests that need a real
# quantized GGUF: make_checkpoint.py -> convert_hf_to_gguf.py (f32) -> llama_model_quantize.
#   tools/llamacpp/quantized_checkpoint.sh OUT.gguf TYPE ARCH SHAPE SEED
# e.g. quantized_checkpoint.sh /tmp/m.gguf Q4_K_M llama k256 11 (k256: every matmul input
# a multiple of 256, so K-quants apply to every tensor). Writes OUT.gguf atomically.
set -euo pipefail
out="$1"; type="$2"; arch="$3"; shape="$4"; seed="$5"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
tmp="$(mktemp -d "${out}.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$REF_PYTHON" "$here/../reference/make_checkpoint.py" --arch "$arch" --shape "$shape" \
  --dtype f32 --seed "$seed" --out "$tmp/hf" >/dev/null
"$here/convert.sh" "$tmp/hf" "$tmp/f32.gguf" f32
"$LLAMA_RUN" quantize "$tmp/f32.gguf" "$tmp/q.gguf" "$type" >/dev/null
mv "$tmp/q.gguf" "$out"
