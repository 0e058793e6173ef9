#!/usr/bin/env bash
# After new records land in committed results directories: regenerate everything derived from them.
#
#   RFBENCH_DATA_DIR=../shared/datasets bash bench/refresh-results.sh [--from SCRATCH_DIR ...]
#
# --from DIR: first take the finished records of DIR (a scratch copy of a spec's results directory
# that long runs wrote into, e.g. a copy of results/uci-splits run into by several lanes with
# `rfbench run --out DIR`) into the spec's directory of the same name under results/: records not
# there yet (a record never overwrites one already committed), the invocations runs.jsonl gained and
# the latest run.json. Then, in the order each reads the previous: results.csv of every results
# directory that gained records; the GPU projection (it reads task times); every spec's check.txt and
# report.md, docs/results.md and results/README.md; the shipped baselines and their listing in
# docs/baselines.md; the dispatch-order simulation, the estimator's accuracy, the UCI and modern
# cost tables. Each step is one of rfbench's commands or a script of bench/perf: nothing is typed.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${RFBENCH_DATA_DIR:?set RFBENCH_DATA_DIR to the dataset mirror (the fingerprints and cost tables read it)}"

changed=()
while (( $# )); do
  case $1 in
    --from)
      src=${2:?--from needs a directory}; shift 2
      dst=results/$(basename "$src")
      [[ -d $dst/records ]] || { echo "error: $dst/records does not exist: --from takes a copy of a committed results directory" >&2; exit 2; }
      before=$(ls "$dst/records" | wc -l)
      # only finished files: a record is written atomically (temporary name, then rename), claims end in .claim
      for f in "$src"/records/*.json; do [[ -e $dst/records/${f##*/} ]] || cp -p "$f" "$dst/records/"; done
      after=$(ls "$dst/records" | wc -l)
      # runs.jsonl: the invocations the scratch copy gained (it started as a copy of this one)
      have=$(wc -l < "$dst/runs.jsonl")
      tail -n +"$((have + 1))" "$src/runs.jsonl" >> "$dst/runs.jsonl"
      [[ $(wc -l < "$src/runs.jsonl") -gt $have ]] && cp -p "$src/run.json" "$dst/run.json"
      [[ -d $src/folds ]] && mkdir -p "$dst/folds" && cp -rn "$src/folds/." "$dst/folds/"
      echo "$dst: $before -> $after records"
      changed+=("$dst") ;;
    *) echo "error: unknown argument $1 (bench/refresh-results.sh [--from SCRATCH_DIR ...])" >&2; exit 2 ;;
  esac
done

for d in "${changed[@]}"; do
  python -c 'import sys; from rfbench.store.rundir import RunDir; RunDir(sys.argv[1]).write_results_csv()' "$d"
done
python bench/perf/gpu.py --project-only --output results/gpu-benchmark.json > /dev/null
rfbench reproduce --all --check-only --quiet --summary docs/results.md > /dev/null
rfbench baselines --write > /dev/null
# docs/baselines.md quotes `rfbench baselines --width 0` in its first fenced block: replace that block
python - <<'EOF'
import re, subprocess
from pathlib import Path
doc = Path("docs/baselines.md")
listing = subprocess.run(["rfbench", "baselines", "--width", "0"], check=True, capture_output=True, text=True).stdout
text = doc.read_text()
new, n = re.subn(r"(lists it \(its output, not typed;[^`]*?\n\n```\n).*?(```)", lambda m: m[1] + listing + m[2],
                 text, count=1, flags=re.S)
if n != 1:
    raise SystemExit("error: docs/baselines.md has no fenced listing after 'lists it (its output, not typed;'")
doc.write_text(new)
EOF
python bench/perf/dispatch_order.py > /dev/null
python bench/perf/estimate_accuracy.py > /dev/null
python bench/perf/uci_cost.py > /dev/null
python bench/perf/modern_cost.py > /dev/null
git status --short | grep -v '^?? .*records/' | head -40 || true
