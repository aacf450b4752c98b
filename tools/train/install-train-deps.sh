#!/bin/sh
# Packages needed to retrain strata-tiny (tools/train/run_all.sh). Training only; not needed to build or test Strata.
set -eu
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  python3 python3-torch python3-numpy python3-sentencepiece sentencepiece \
  r-base-core r-cran-janeaustenr r-cran-tokenizers \
  sword-text-web libsword-utils \
  fortunes fortunes-min fortune-anarchism \
  dict-devil dictzip \
  nodejs npm
cd "$(dirname "$0")" && npm ci --no-audit --no-fund
