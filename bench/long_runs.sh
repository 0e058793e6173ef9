#!/usr/bin/env bash
# The long reproduction runs, in priority order, as two lanes of one worker each (2 cores).
# Every command resumes its results directory, so a session just starts both lanes again:
#
#   RFBENCH_DATA_DIR=../shared/datasets nohup bash bench/long_runs.sh 1 > lane1.log 2>&1 &
#   RFBENCH_DATA_DIR=../shared/datasets nohup bash bench/long_runs.sh 2 > lane2.log 2>&1 &
#
# and commits results/ before it ends (background jobs do not survive a session).
# The two lanes share results directories and split their tasks by --datasets or --folds (each
# lane's results.csv includes the other's records); since task claims (store.py) an overlap would
# only make one lane skip what the other is running, but a split keeps both lanes busy.
# Replace this file with `mv`, never edit it in place while a lane runs: bash reads a script as it
# executes it, and an in-place edit corrupts the running lane (a renamed file keeps the old inode).
# Finished work, kept as no-ops for reference: the Table 4 run (issue 2), SALSA (issue 5), the GFC
# Table 1 column, the EERF claim and the GBRFF scaling curve (issues 3 and 4).
set -euo pipefail
cd "$(dirname "$0")/.."
lane="${1:?usage: long_runs.sh 1|2}"
run() { echo "== $(date -u +%FT%TZ) rfbench run $*"; rfbench run --jobs 1 --threads 1 --quiet --no-report "$@"; }
gbrff_protocol=(--features 100 --protocol splits --repeats 20 --test-size 0.3 --out results/gbrff-table2)
gbrff_small=wine,sonar,newthyroid,heart,bupa,ionosphere,wdbc,balance,australian,pima,vehicle,german,splice,spambase

if [[ "$lane" == 1 ]]; then
  # issue 4: GBRFF Table 2 (20 random 70/30 splits) on all but occupancy (lane 2 has it), then the
  # paper's GFC column (the reference code's variant) and the GFC paper's GFC on the same splits
  run --suite gbrff --datasets "$gbrff_small" --methods gbrff1,gbrff2,pbrff,lgbm "${gbrff_protocol[@]}"
  run --suite gbrff --methods gfc-gbrff "${gbrff_protocol[@]}"
  run --suite gbrff --methods gfc "${gbrff_protocol[@]}"
  # issue 3: a la carte n = 500, outer folds 5-9 (lane 2 has 0-4), Q = 5 first
  run --suite torgo --methods alc --features 500 --folds 5-6 --out results/alc-table1
  run --suite torgo --methods alc --features 500 --folds 7-9 --out results/alc-table1
  run --suite torgo --methods alc-q1,alc-q2 --features 500 --folds 5-9 --out results/alc-tables2-3
elif [[ "$lane" == 2 ]]; then
  # issue 3: a la carte n = 100, Q = 5 (Table 1)
  run --suite torgo --methods alc --features 100 --out results/alc-table1
  # issue 4: occupancy, the largest GBRFF set (about 3 core-hours), beside lane 1's other sets
  run --suite gbrff --datasets occupancy --methods gbrff1,gbrff2,pbrff,lgbm "${gbrff_protocol[@]}"
  # issue 3: Q = 1, 2 at n = 100 (Tables 2-3), then n = 500 outer folds 0-4 (n = 500 costs ~7x
  # n = 100: a few folds of every dataset first, so that a partial run already covers the table)
  run --suite torgo --methods alc-q1,alc-q2 --features 100 --out results/alc-tables2-3
  run --suite torgo --methods alc --features 500 --folds 0-1 --out results/alc-table1
  run --suite torgo --methods alc --features 500 --folds 2-4 --out results/alc-table1
  run --suite torgo --methods alc-q1,alc-q2 --features 500 --folds 0-4 --out results/alc-tables2-3
else
  echo "usage: long_runs.sh 1|2" >&2
  exit 2
fi
echo "== $(date -u +%FT%TZ) lane $lane finished"
