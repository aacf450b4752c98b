#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, and runs every test
# (unit, golden model checks against PyTorch, conformance, end-to-end).
# Usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -L unit
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh release
ctest --preset release -j "$(nproc)" "$@"
