#!/usr/bin/env bash
# Fast regression of reproduced numbers against the published tables (CI; a few minutes).
set -euo pipefail
out="${RFBENCH_CI_OUT:-$(mktemp -d)/ci-table4}"
rfbench run --datasets delta-ailerons,kinematics,cpu-activity --methods rff-gauss,rff-laplace,rff-cauchy \
  --features 100 --strict --quiet --no-report --out "$out"
rfbench check "$out" --spec bench/ci/gfc2016-table4.yaml

# GFC and a la carte against a reviewed reference run of a fast configuration
out2="${RFBENCH_CI_OUT2:-$(mktemp -d)/ci-gfc-alc}"
rfbench run --datasets delta-ailerons,kinematics --methods gfc,alc --features 20 --outer-folds 3 \
  --inner-folds 3 --max-samples 1500 --strict --quiet --no-report --out "$out2"
rfbench check "$out2" --spec bench/ci/gfc-alc.yaml
