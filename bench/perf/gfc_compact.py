"""GFC's one-frequency CV evaluation on dense inputs against mode-centred sparse ones.

On one outer fold of a dataset exactly as the runner prepares it (one BLAS thread), for GFC's
chunk sizes (a random subset of m/M of the fold's m training rows: M = 25 descents at n = 500, 5 at
n = 100, 1 for the variants whose descents see all rows): the median time of building :class:`rfbench.methods.cvgrad.OneFrequencyCV` and of one
evaluation (value and gradient) on the dense X and on
:class:`rfbench.methods.moderows.ModeCentredRows`, and the largest relative difference of value
and gradient between the two.

    python bench/perf/gfc_compact.py [--dataset ujindoorloc] [--fold 0] [--output results/gfc-compact.json]
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from rfbench import protocol as proto
from rfbench import registry
from rfbench.data.sources import DataSources
from rfbench.execution.tasks import fold_task
from rfbench.methods.cvgrad import OneFrequencyCV, inverted_blocks
from rfbench.methods.moderows import ModeCentredRows, column_modes


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ujindoorloc")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--chunks", default="25,5,1", help="numbers of chunks M: each timing uses m/M rows")
    ap.add_argument("--output", default="results/gfc-compact.json")
    args = ap.parse_args()

    task = fold_task(args.dataset, "gfc", args.fold, proto.Protocol(), DataSources.from_settings(args.data_dir), 1, registry=registry.load())
    X_all, y_all = np.asarray(task.X_tr), np.asarray(task.y_tr, dtype=float)
    modes, off = column_modes(X_all)
    compact_all = ModeCentredRows.from_dense(X_all, modes)
    rng = np.random.default_rng(0)
    rows_out = []
    with threadpool_limits(limits=1):
        for m in sorted({X_all.shape[0] // int(k) for k in args.chunks.split(",")}):
            idx = np.sort(rng.choice(X_all.shape[0], size=m, replace=False))
            X, y, f = X_all[idx], y_all[idx], np.full(m, y_all[idx].mean())
            splits = inverted_blocks(m, 5)
            w = rng.standard_normal(X.shape[1]) / np.sqrt(X.shape[1])
            row = {"rows": m, "dense_mb": round(X.nbytes / 2**20, 1)}
            results = {}
            for name, XX in (("dense", X), ("compact", compact_all[idx])):
                row[f"{name}_build_ms"] = _median_ms(partial(OneFrequencyCV, XX, y, f, splits), 5)
                cv = OneFrequencyCV(XX, y, f, splits)
                results[name] = cv(w, 1e-3)
                row[f"{name}_eval_ms"] = _median_ms(partial(cv, w, 1e-3), 31)
            (v0, g0, _), (v1, g1, _) = results["dense"], results["compact"]
            row["value_rel_diff"] = abs(v1 - v0) / abs(v0)
            row["grad_rel_diff"] = float(np.abs(g1 - g0).max() / np.abs(g0).max())
            row["eval_ratio"] = row["dense_eval_ms"] / row["compact_eval_ms"]
            rows_out.append(row)
            print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    out = {"dataset": args.dataset, "fold": args.fold, "shape": list(X_all.shape),
           "off_mode_density": off / X_all.size, "threads": 1, "rows": rows_out}
    Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
