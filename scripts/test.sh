#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, and runs every test
# (unit, golden model checks against PyTorch, conformance, end-to-end, a short
# soak), then the sanitizer runs (scripts/sanitize.sh: unit and concurrency
# tests under ASan + UBSan, concurrency tests under ThreadSanitizer).
# Usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -L unit
#   With ctest args only the release build's matching tests run (no sanitizers).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh release
ctest --preset release -j "$(nproc)" "$@"
if [[ $# -eq 0 ]]; then
  bash scripts/sanitize.sh asan tsan
fi
