"""One-off migration (2026-11-24): records of a fit shared by several budgets attribute its time.

Before, every record of a work item whose one fit served several n_features (LightGBM, GBRFF)
repeated the whole tuning and fitting time, so n = 100 showed the cost of tuning 500 trees and sums
counted it twice. The runner now writes ``tune_s``/``fit_s`` in proportion to n and the whole in
``shared_fit_s`` (rfbench.execution.tasks). This rewrites the older records the same way: the records of one
item are those of one (dataset, method, fold, seed, protocol) with the identical tune_s and fit_s
the item wrote into each; a record fitted alone is left as is. Errors and parameters are untouched;
running it twice changes nothing.

    python bench/migrations/shared_fit_times.py results/gbrff2020-table2 results/gfc2016-table4
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from rfbench.store import atomic_write_text


def migrate(run_dir: Path) -> int:
    groups = defaultdict(list)
    for path in sorted((run_dir / "records").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("status") != "done" or "shared_fit_s" in rec or rec.get("tune_s") is None:
            continue
        key = (rec["dataset"], rec["method"], rec["fold"], rec["seed"], rec["protocol"], rec["tune_s"], rec["fit_s"])
        groups[key].append((path, rec))
    changed = 0
    for members in groups.values():
        budgets = [rec["n_features"] for _, rec in members]
        if len(members) < 2 or len(set(budgets)) != len(budgets):
            continue
        whole = members[0][1]["tune_s"] + members[0][1]["fit_s"]
        for path, rec in members:
            share = rec["n_features"] / sum(budgets)
            rec.update(shared_fit_s=whole, tune_s=rec["tune_s"] * share, fit_s=rec["fit_s"] * share,
                       total_s=whole * share + rec["predict_s"])
            atomic_write_text(path, json.dumps(rec, sort_keys=True, default=str))
            changed += 1
    return changed


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{arg}: {migrate(Path(arg))} records attribute a shared fit")
