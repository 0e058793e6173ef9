#!/usr/bin/env bash
# Fast regression of reproduced numbers against the published tables (CI; a few minutes).
set -euo pipefail
out="${RFBENCH_CI_OUT:-$(mktemp -d)/ci-table4}"
rfbench run --datasets delta-ailerons,kinematics,cpu-activity --methods rff-gauss,rff-laplace,rff-cauchy \
  --features 100 --strict --quiet --no-report --out "$out"
rfbench check "$out" --spec bench/ci-gfc2016-table4.yaml
