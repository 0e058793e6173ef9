"""À la carte's inner-CV error against its test error, from the committed records (nothing is run).

Every record of ``alc``, ``alc-q1`` and ``alc-q2`` keeps the inner-CV MSE its hyper-parameter search
reached (``params.cv_mse``, on the same scale as the test error before ×100 and the square root). Per
(dataset, method, n): the mean over the outer folds of the test RMSE × 100, of the inner-CV RMSE × 100
and of their difference (test − CV, the optimism of the search), and the cell's rank among the table's
cells by that gap. A search that tunes Q × (2d + 1) spectral hyper-parameters on five validation folds
can fit their noise: the gap says how much.

    python bench/analysis/alc_cv_gap.py [--results results/gfc2016-tables2-3/results.csv
                                                   results/gfc2016-table1/results.csv]
                                        [--output results/alc-cv-gap.json]
    python bench/analysis/alc_cv_gap.py --results results/uci-splits/results.csv \
                                        --output results/alc-cv-gap-uci.json

(Q = 1, 2 are Tables 2-3's records, Q = 5 (``alc``) Table 1's, which Tables 2-3 also read; the UCI
suite's Q = 5 row is ``alc-q5``.) The columns are in the records' metric: ``rmse100`` (the torgo
tables: RMSE × 100 of outputs scaled to range one, the scale of ``cv_mse`` before × 100) or ``rmse``
(the UCI splits: the target as stored, while the estimator saw it standardised on the training part,
so ``cv_mse`` is converted with that part's scale, the runner's ``y_unit`` of each split: this needs
the dataset mirror, ``RFBENCH_DATA_DIR``).
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd

METHODS = ("alc-q1", "alc-q2", "alc", "alc-q5")
#: the factor from √cv_mse to the records' error, per metric
SCALE = {"rmse100": 100.0, "rmse": 1.0}


@functools.cache
def target_unit(dataset: str, split: int) -> float:
    """The scale the published protocol divided split ``split``'s target by for fitting (the runner's
    own ``y_unit``, from the mirror): √cv_mse × it is the inner-CV RMSE on the target as stored."""
    from rfbench.execution.tasks import fold_task
    from rfbench.protocol import Protocol

    return float(fold_task(dataset, "alc-q1", split, Protocol("published"), None, registry=_registry()).y_unit)


@functools.cache
def _registry():
    from rfbench import registry

    return registry.load()


def gaps(records: pd.DataFrame) -> pd.DataFrame:
    done = records[(records["status"] == "done") & records["method"].isin(METHODS)].copy()
    metrics = sorted(set(done["metric"].astype(str)))
    if len(metrics) != 1 or metrics[0] not in SCALE:
        raise SystemExit(f"alc_cv_gap: the records' metric is {', '.join(metrics) or 'none'}; one of "
                         f"{', '.join(SCALE)} is needed (one results file per metric)")
    metric = metrics[0]
    unit = [SCALE[metric] * (target_unit(ds, int(f)) if metric == "rmse" else 1.0)
            for ds, f in zip(done["dataset"], done["fold"], strict=True)]
    done[f"cv_{metric}"] = [u * np.sqrt(json.loads(p)["cv_mse"]) for u, p in zip(unit, done["params"], strict=True)]
    done["gap"] = done["error"].astype(float) - done[f"cv_{metric}"]
    out = (done.groupby(["dataset", "method", "n_features"])
           .agg(folds=("fold", "size"), **{f"test_{metric}": ("error", "mean"), f"cv_{metric}": (f"cv_{metric}", "mean")},
                gap=("gap", "mean"))
           .reset_index())
    by = "gap"
    if metric == "rmse":   # each set in its own target's unit: ranked by the share of the test error
        out["gap_share"] = out["gap"] / out[f"test_{metric}"]
        by = "gap_share"
    out["gap_rank"] = out[by].rank(ascending=False, method="min").astype(int)    # 1 = the largest gap
    return out.sort_values(["dataset", "n_features", "method"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", nargs="+",
                    default=["results/gfc2016-tables2-3/results.csv", "results/gfc2016-table1/results.csv"])
    ap.add_argument("--output", default="results/alc-cv-gap.json")
    args = ap.parse_args(argv)
    table = gaps(pd.concat([pd.read_csv(f) for f in args.results], ignore_index=True))
    rows = [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
            for r in table.to_dict("records")]
    Path(args.output).write_text(json.dumps({"sources": args.results, "methods": [m for m in METHODS if m in set(table["method"])],
                                             "cells": rows}, indent=1) + "\n")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if "gap_share" in table:
        for n, cells in table.groupby("n_features"):
            over = cells[cells["gap_share"] > 0.5]
            print(f"n = {n}: {len(over)} of {len(cells)} cells have more than half of their test RMSE unseen by "
                  f"the inner CV (gap share > 0.5), on {over['dataset'].nunique()} sets: "
                  f"{', '.join(sorted(over['dataset'].unique())) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
