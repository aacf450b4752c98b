#!/usr/bin/env bash
# The sanitizer half of the test suite (run by scripts/test.sh):
#   asan - the unit and concurrency tests (ctest labels) built with
#          AddressSanitizer + UndefinedBehaviorSanitizer in build/asan, and
#          the short soak (label soak) against the server built the same way;
#   tsan - the concurrency tests (engine, scheduler, tiers, transfer worker,
#          event publisher) built with ThreadSanitizer in build/tsan, and the
#          short soak against the server built the same way (Boost.Asio's
#          fences, which TSan cannot model, are off there: preset tsan).
# Any report fails the run. Sanitizer builds use -O1 -g1 and DCHECKs on; only
# the test programs (targets strata_unit_tests and strata_concurrency_tests)
# and, for the soaks, the strata binary are built, not the benchmarks.
# Usage: scripts/sanitize.sh [asan|tsan]... [-- ctest args...]   (default: asan tsan)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# ccache: paths relative to the checkout and no working-directory hash, so a
# fresh clone elsewhere (CI) reuses what an earlier build compiled.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
kinds=()
while [[ $# -gt 0 && $1 != "--" ]]; do kinds+=("$1"); shift; done
[[ ${1:-} == "--" ]] && shift
if [[ ${#kinds[@]} -eq 0 ]]; then kinds=(asan tsan); fi

# exitcode: a report fails the test even if the program would have passed.
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:exitcode=86"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Reports from inside uninstrumented system libraries (libzmq's own threads,
# libcurl) are not ours to fix; tools/sanitizers/tsan.supp says which and why.
export TSAN_OPTIONS="suppressions=$root/tools/sanitizers/tsan.supp:second_deadlock_stack=1:exitcode=66:halt_on_error=1"

for kind in "${kinds[@]}"; do
  case "$kind" in
    asan) targets=(strata_unit_tests strata_concurrency_tests strata)
          labels='^(unit|concurrency|soak)$' ;;
    tsan) targets=(strata_concurrency_tests strata); labels='^(concurrency|soak)$' ;;
    *) echo "sanitize.sh: unknown sanitizer '$kind' (asan|tsan)" >&2; exit 2 ;;
  esac
  if [[ ! -f "build/$kind/build.ninja" ]]; then cmake --preset "$kind" >/dev/null; fi
  echo "== $kind: building ${targets[*]}"
  cmake --build "build/$kind" -j "$(nproc)" --target "${targets[@]}"
  echo "== $kind: ctest -L '$labels'"
  ctest --preset "$kind" -j "$(nproc)" -L "$labels" "$@"
done
