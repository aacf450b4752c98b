#!/usr/bin/env bash
# Configures (once) and builds Strata with the given CMake preset (default: release).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
preset="${1:-release}"
cd "$root"
# ccache: paths relative to the checkout and no working-directory hash, so a
# fresh clone elsewhere (CI) reuses what an earlier build compiled.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
if [ ! -f "build/$preset/build.ninja" ]; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build --preset "$preset" -j "$(nproc)"
