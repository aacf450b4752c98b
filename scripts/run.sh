#!/usr/bin/env bash
# The main job: installs dependencies, builds Strata, and generates text.
# Until the bundled trained model lands, it generates from a small
# random-weight checkpoint the project creates (tools/reference).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh release
model="$root/build/release/demo-model"
if [ ! -f "$model/config.json" ]; then
  /usr/bin/python3 tools/reference/make_checkpoint.py --arch llama --dtype bf16 --out "$model"
fi
./build/release/apps/strata/strata generate --model "$model" --prompt-ids 1,2,3,4,5,6,7,8 \
  --max-tokens 16 --json "$@"
