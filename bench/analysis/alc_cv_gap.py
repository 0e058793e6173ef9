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

(Q = 1, 2 are Tables 2-3's records, Q = 5 (``alc``) Table 1's, which Tables 2-3 also read.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

METHODS = ("alc-q1", "alc-q2", "alc")


def gaps(records: pd.DataFrame) -> pd.DataFrame:
    done = records[(records["status"] == "done") & records["method"].isin(METHODS)].copy()
    done["cv_rmse100"] = [100 * np.sqrt(json.loads(p)["cv_mse"]) for p in done["params"]]
    done["gap"] = done["error"].astype(float) - done["cv_rmse100"]
    out = (done.groupby(["dataset", "method", "n_features"])
           .agg(folds=("fold", "size"), test_rmse100=("error", "mean"), cv_rmse100=("cv_rmse100", "mean"),
                gap=("gap", "mean"))
           .reset_index())
    out["gap_rank"] = out["gap"].rank(ascending=False, method="min").astype(int)    # 1 = the largest gap
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
    Path(args.output).write_text(json.dumps({"sources": args.results, "methods": list(METHODS),
                                             "cells": rows}, indent=1) + "\n")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
