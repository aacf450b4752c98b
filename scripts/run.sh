#!/usr/bin/env bash
# The main job: installs dependencies, builds Strata, serves the bundled model
# with its OpenAI-compatible API, answers one chat request to show it works,
# and keeps serving on http://127.0.0.1:${PORT:-8000} until Ctrl-C.
#   scripts/run.sh --once     stop after the demo request
# STRATA_MODEL=PATH serves another model (Hugging Face directory or .gguf).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
once=0
[ "${1:-}" = "--once" ] && once=1
bash scripts/install-deps.sh
bash scripts/build.sh release

model="${STRATA_MODEL:-$root/models/strata-tiny}"
if [ ! -f "$model/config.json" ] && [ ! -f "$model" ]; then
  # No bundled model in this checkout: make a small random-weight one.
  model="$root/build/release/demo-model"
  [ -f "$model/config.json" ] ||
    /usr/bin/python3 tools/reference/make_checkpoint.py --arch qwen2 --dtype bf16 --out "$model"
fi
port="${PORT:-8000}"
./build/release/apps/strata/strata serve "$model" --host 127.0.0.1 --port "$port" \
  --served-model-name strata &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  kill -0 $server 2>/dev/null || { echo "strata serve exited" >&2; exit 1; }
  sleep 0.5
done
request='{"model":"strata","messages":[{"role":"user","content":"Tell me about Elizabeth."}],
          "max_tokens":48,"temperature":0}'
echo "POST /v1/chat/completions $request"
curl -s "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d "$request" | /usr/bin/python3 -m json.tool
if [ "$once" = 1 ]; then exit 0; fi
echo "strata is serving $model at http://127.0.0.1:$port/v1 (Ctrl-C to stop)"
wait $server
