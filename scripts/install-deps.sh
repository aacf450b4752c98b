#!/usr/bin/env bash
# Installs every Debian package Strata needs to build, test and benchmark.
# Idempotent: packages already present are skipped, and apt is only asked
# when something is missing. Run as root (or with sudo available).
# Usage: scripts/install-deps.sh          install what is missing
#        scripts/install-deps.sh --list   print PACKAGES, one a line, and exit
#          (scripts/check_deps.py, ctest dependency_check, reads the list this way)
#        scripts/install-deps.sh --with-fuzz   also FUZZ_PACKAGES (scripts/fuzz.sh
#          runs this itself; the build and test suite do not need them)
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git
  # libraries
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libsimdjson-dev
  libboost-dev  # Boost.Asio (header-only) for the HTTP server
  libdnnl-dev libopenblas-dev
  libpcre2-dev libutf8proc-dev libxxhash-dev
  liburing-dev  # bench/fs_tier_bench only (io_uring vs threads)
  libcurl4-openssl-dev libssl-dev  # object-store tier: HTTP and SigV4 signing
  libzmq3-dev  # KV events publisher (src/events)
  zlib1g-dev  # PNG plots of strata bench serve
  # numerical reference and test tooling (run with /usr/bin/python3)
  python3 python3-numpy python3-torch python3-jinja2 python3-yaml python3-prometheus-client curl
  python3-botocore  # oracle for the object-store tier's SigV4 signer
  python3-zmq python3-msgpack  # KV events subscriber test
  # node for the npm-based oracles and API tests
  nodejs
)

# scripts/fuzz.sh only: clang with libFuzzer and its sanitizer runtimes.
FUZZ_PACKAGES=(clang libclang-rt-14-dev)

list_only=0
for arg in "$@"; do
  case "$arg" in
    --list) list_only=1 ;;
    --with-fuzz) PACKAGES+=("${FUZZ_PACKAGES[@]}") ;;
    *) echo "install-deps: unknown argument $arg (see the header of $0)" >&2; exit 2 ;;
  esac
done
if [[ $list_only == 1 ]]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm ships inside nodejs on nodesource builds; install Debian's only when absent.
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} Debian packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages used only by test and benchmark tooling (oracles, converters,
# the OpenAI client), pinned by each folder's package-lock.json and
# re-installed when the lock changes. (tools/train is for the hand-run
# training pipeline and is not installed here.)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPM_DIRS=(tools/tokenizer-oracle tools/chat-template-oracle tools/llamacpp tools/openai-e2e
  tools/s3-server)
for rel in "${NPM_DIRS[@]}"; do
  lock="$root/$rel/package-lock.json"
  [ -e "$lock" ] || continue
  dir="$(dirname "$lock")"
  stamp="$dir/node_modules/.strata-lock.sha256"
  want="$(sha256sum "$lock" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then continue; fi
  echo "install-deps: npm ci in ${dir#$root/}"
  # npm ci when the lock resolves as-is; some locks list optional packages for
  # other platforms that this registry lacks, so fall back to a --no-save
  # install of the locked versions without them.
  (cd "$dir" && { npm ci --ignore-scripts --no-audit --no-fund --loglevel=error ||
    npm install --no-save --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=error; })
  echo "$want" > "$stamp"
done
