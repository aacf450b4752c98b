#!/usr/bin/env bash
# Soak test: many clients stream, disconnect, send malformed and oversized
# requests and repeat long prefixes against `strata serve` (small KV pool,
# host + filesystem tiers on a tmpfs quota) while a fault injector corrupts,
# truncates and deletes chunk files and fills the quota. Checks throughout:
# no crash, VmRSS under a bound, every greedy probe == its reference text,
# every malformed request -> 4xx with an error message. Loopback only.
# Builds nothing: run scripts/build.sh first.
# Usage: scripts/soak.sh [--duration SECONDS] [--max-requests N] [--strata BIN]
#                        [--report PATH] [more flags: scripts/soak.sh --help]
#   scripts/soak.sh --duration 1800     the recorded 30-minute run (RELIABILITY.md)
#   scripts/soak.sh --duration 40       the short variant ctest runs (label soak)
# Exit code 0 only when every check passed; the JSON report's path is printed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# No cd: relative --strata/--model/--report paths mean the caller's directory.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
exec "$python" "$root/tools/soak/soak.py" "$@"
