#!/usr/bin/env bash
# Fast regression of every published table (CI): each spec's `ci:` block (bench/*.yaml) is run and
# every error and chosen hyper-parameter is compared exactly with its committed reference
# (bench/reference/<spec>.csv); a cell that moves fails with its dataset, method, n, fold and field.
# About 1.5 minutes on one core (RFBENCH_CI_JOBS=2 spreads tasks over two processes: same numbers,
# but each spec then starts its own worker pool). After reviewing a change that moves numbers on purpose:
#   rfbench reproduce SPEC --ci --write-reference
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--all --jobs "${RFBENCH_CI_JOBS:-1}")
if [[ -n "${RFBENCH_CI_OUT:-}" ]]; then args+=(--out "$RFBENCH_CI_OUT"); fi
rfbench reproduce --ci "${args[@]}"
