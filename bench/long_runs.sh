#!/usr/bin/env bash
# The long reproduction runs, in priority order, as two lanes of one worker each (2 cores).
# Every command resumes its results directory, so a session just starts both lanes again:
#
#   RFBENCH_DATA_DIR=../shared/datasets nohup bash bench/long_runs.sh 1 > lane1.log 2>&1 &
#   RFBENCH_DATA_DIR=../shared/datasets nohup bash bench/long_runs.sh 2 > lane2.log 2>&1 &
#
# and commits results/ before it ends (background jobs do not survive a session).
set -euo pipefail
cd "$(dirname "$0")/.."
lane="${1:?usage: long_runs.sh 1|2|table4}"
run() { echo "== $(date -u +%FT%TZ) rfbench run $*"; rfbench run --jobs 1 --threads 1 --quiet --no-report "$@"; }

if [[ "$lane" == table4 ]]; then
  # lane 1's first run on both cores (two workers), when nothing else needs them
  rfbench run --jobs 2 --threads 1 --quiet --no-report --suite torgo \
      --methods rff-gauss,rff-laplace,rff-cauchy,lgbm --features 100,500 --out results/gfc-table4-rff
elif [[ "$lane" == 1 ]]; then
  # issue 2: the LightGBM half of the Table 4 run (a no-op once complete)
  run --suite torgo --methods rff-gauss,rff-laplace,rff-cauchy,lgbm --features 100,500 --out results/gfc-table4-rff
  # issue 5: SALSA Table 1 (single split; minutes) and peak memory, then SALSA on the Torgo suite
  # (Nystrom path above the exact threshold)
  run --suite salsa --methods salsa,krr --protocol holdout --features 500 --out results/salsa-table1
  [[ -f results/salsa-memory.json ]] || python bench/salsa_memory.py --output results/salsa-memory.json
  run --suite torgo --methods salsa --features 100,500 --out results/salsa-torgo
  # issue 4: GBRFF Table 2 protocol (20 random 70/30 splits), then the GFC-paper GFC next to it
  run --suite gbrff --methods gbrff1,gbrff2,pbrff,lgbm --features 100 --protocol splits --repeats 20 \
      --test-size 0.3 --out results/gbrff-table2
  run --suite gbrff --methods gfc --features 100 --protocol splits --repeats 20 --test-size 0.3 \
      --out results/gbrff-table2
else
  # issue 3 (GFC column, EERF claim and GBRFF scaling are done and committed):
  # a la carte, Q = 5 (Table 1) first, then Q = 1, 2 (Tables 2-3); n = 100 before 500
  run --suite torgo --methods alc --features 100 --out results/alc-table1
  run --suite torgo --methods alc-q1,alc-q2 --features 100 --out results/alc-tables2-3
  # n = 500 costs ~7x n = 100 (one Gram matrix of 2n+1 columns per evaluation): a few folds of
  # every dataset first, so that a partial run already covers the table
  run --suite torgo --methods alc --features 500 --folds 0-1 --out results/alc-table1
  run --suite torgo --methods alc --features 500 --folds 2-4 --out results/alc-table1
  run --suite torgo --methods alc --features 500 --out results/alc-table1
  run --suite torgo --methods alc-q1,alc-q2 --features 500 --out results/alc-tables2-3
fi
echo "== $(date -u +%FT%TZ) lane $lane finished"
