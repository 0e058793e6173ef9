#!/usr/bin/env bash
# Fast regression of every published table (CI): each spec's `ci:` block (bench/*.yaml) is run and
# every error and chosen hyper-parameter is compared exactly with its committed reference
# (bench/reference/<spec>.csv); a cell that moves fails with its dataset, method, n, fold and field.
# About 1.5 minutes on one core (RFBENCH_CI_JOBS=2 spreads tasks over two processes: same numbers,
# but each spec then starts its own worker pool). After reviewing a change that moves numbers on purpose:
#   rfbench reproduce SPEC --ci --write-reference
# Then the device regression (issue 38): the same ci configurations with the device code on the CPU
# (torch-cpu), each (dataset, method, n) cell's mean error within the table's check tolerance of the
# same reference and the CPU-only methods' tasks still exact (rfbench/experiments/regress.py); only the specs with
# a method that takes a device run, the others are skipped with a note. Skipped without torch. It adds
# about 1.5 minutes (94 s on the 2-core development machine; 185 s with it loaded by other work;
# docs/device.md), most of it à la carte, whose torch code is 2-3x slower than NumPy on one core.
set -euo pipefail
cd "$(dirname "$0")/.."
# the references' numeric path, pinned before NumPy loads: OpenBLAS's Haswell (AVX2) kernels and NumPy's
# loops capped at AVX2, which every x86-64 CI machine has; an AVX-512 machine's own kernels round
# differently and the small ci configurations amplify it (rfbench/experiments/numeric_path.py)
pins="$(python -m rfbench.experiments.numeric_path --exports)"   # an assignment: set -e stops on a failure
eval "$pins"
args=(--all --jobs "${RFBENCH_CI_JOBS:-1}")
if [[ -n "${RFBENCH_CI_OUT:-}" ]]; then args+=(--out "$RFBENCH_CI_OUT"); fi
rfbench reproduce --ci "${args[@]}"
if python -c 'import torch' 2>/dev/null; then
  python -m rfbench.experiments.regress --device torch-cpu "${args[@]}"
else
  echo "device regression skipped: torch is not installed (pip install 'rfbench[gpu]')"
fi
