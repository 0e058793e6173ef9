#!/usr/bin/env bash
# The long reproduction runs, in priority order. Start the same list once per core:
#
#   RFBENCH_DATA_DIR=../shared/datasets nohup bash bench/long_runs.sh 1 > lane1.log 2>&1 &
#   RFBENCH_DATA_DIR=../shared/datasets nohup bash bench/long_runs.sh 2 > lane2.log 2>&1 &
#
# Both lanes run the same commands: every task is claimed before it runs (records/<key>.claim),
# so two invocations of one command share its tasks instead of repeating them, and a lane that
# reaches a command's end while the other still runs its last task moves on to the next command.
# Every command resumes its results directory; commit results/ before a session ends (background
# jobs do not survive it). Replace this file with `mv`, never edit it in place while a lane runs:
# bash reads a script as it executes it, and an in-place edit corrupts the running lane.
# Finished work, kept out of the list: the Table 4 run (issue 2), SALSA (issue 5), the GFC Table 1
# column, the EERF claim, the GBRFF scaling curve and GBRFF Table 2 (issue 4: rfbench run --suite
# gbrff --features 100 --protocol splits --repeats 20 --test-size 0.3 --methods
# gbrff1,gbrff2,pbrff,lgbm,gfc-gbrff,gfc --out results/gbrff-table2).
set -euo pipefail
cd "$(dirname "$0")/.."
lane="${1:?usage: long_runs.sh LANE (a label for the log, e.g. 1 or 2)}"
run() { echo "== lane $lane $(date -u +%FT%TZ) rfbench run $*"; rfbench run --jobs 1 --threads 1 --quiet --no-report "$@"; }
# issue 3, à la carte with the inverse-range ARD start (2026-11-23; the runs made with the previous
# start were dropped): the n = 100 columns of Tables 1-3 first, then n = 500, Q = 5 (Table 1) first,
# a few outer folds of every dataset at a time so that a partial run already covers the table
# (all complete on 2026-11-24: a new run of this list finds every task done and returns at once)
run --suite torgo --methods alc --features 100 --out results/alc-table1
run --suite torgo --methods alc-q1,alc-q2 --features 100 --out results/alc-tables2-3
run --suite torgo --methods alc --features 500 --folds 0-1 --out results/alc-table1
run --suite torgo --methods alc --features 500 --folds 2-4 --out results/alc-table1
run --suite torgo --methods alc --features 500 --out results/alc-table1
run --suite torgo --methods alc-q1,alc-q2 --features 500 --folds 0-1 --out results/alc-tables2-3
run --suite torgo --methods alc-q1,alc-q2 --features 500 --out results/alc-tables2-3
echo "== lane $lane $(date -u +%FT%TZ) finished"
