"""Would LightGBM's 500-tree validation score reuse the 100-tree prediction (issue 44 item 4)? The
inner CV of rfbench.methods.lgbm predicts each booster with ``num_iteration=100`` and then with
``num_iteration=500``, which walks the first 100 trees again. The reuse: the 500-tree prediction as
the 100-tree one + ``predict(start_iteration=100, num_iteration=400)``. This measures, on one outer
fold of real sets (exactly the runner's: rfbench.execution.tasks.fold_task), every combination and
inner fold of the inner CV: how far the reused 500-tree predictions are from LightGBM's own (bit for
bit?), whether the CV errors and the chosen combinations stay the same, and the share of the
fit's time that the reuse would save (the 100-tree passes repeated inside the 500-tree ones).

    python bench/perf/lgbm_reuse.py [--datasets delta-ailerons,kinematics] [--output results/lgbm-reuse.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def measure(dataset: str, data_dir: str | None) -> dict:
    import lightgbm
    from threadpoolctl import threadpool_limits

    from rfbench import protocol as proto
    from rfbench import registry
    from rfbench.data.sources import DataSources
    from rfbench.execution.tasks import fold_task
    from rfbench.methods.common import as_generator, resolve_cv, seed_from
    from rfbench.methods.lgbm import DEFAULT_GRID, LGBMRegressorCV
    from rfbench.methods.tuning import param_grid

    protocol = proto.Protocol(name="cv", outer_folds=10, inner_folds=5, seed=0)
    task = fold_task(dataset, "lgbm", 0, protocol, DataSources.from_settings(data_dir), threads=1,
                     registry=registry.load())
    X, y = task.X_tr, task.y_tr
    est = LGBMRegressorCV(budgets=[100, 500], **task.common)
    est._threads = 1
    rng = as_generator(est.random_state)          # the estimator's own seed and inner splits (_fit)
    seed = seed_from(rng)
    splits = resolve_cv(est.cv, X.shape[0], rng)
    combos = param_grid(DEFAULT_GRID)
    err_own, err_reuse = np.zeros((len(combos), 2)), np.zeros((len(combos), 2))
    worst_abs, worst_rel, equal, total = 0.0, 0.0, 0, 0
    t_train = t_100 = t_500 = t_rest = 0.0
    with threadpool_limits(1):
        for tr, va in splits:
            data = lightgbm.Dataset(X[tr], y[tr], params={"objective": "regression", **est._fixed(seed)}).construct()
            for i, params in enumerate(combos):
                t = time.perf_counter()
                booster = lightgbm.train({**est._params(params, seed), "objective": "regression"}, data,
                                         num_boost_round=500, keep_training_booster=True)
                t_train += time.perf_counter() - t
                t = time.perf_counter()
                p100 = booster.predict(X[va], num_iteration=100)
                t_100 += time.perf_counter() - t
                t = time.perf_counter()
                p500 = booster.predict(X[va], num_iteration=500)
                t_500 += time.perf_counter() - t
                t = time.perf_counter()
                r500 = p100 + booster.predict(X[va], start_iteration=100, num_iteration=400)
                t_rest += time.perf_counter() - t
                diff = np.abs(r500 - p500)
                worst_abs = max(worst_abs, float(diff.max()))
                worst_rel = max(worst_rel, float((diff / np.maximum(np.abs(p500), np.finfo(float).tiny)).max()))
                equal += int((r500 == p500).sum())
                total += len(p500)
                mse100 = np.mean((p100 - y[va]) ** 2) / len(splits)
                err_own[i] += [mse100, np.mean((p500 - y[va]) ** 2) / len(splits)]
                err_reuse[i] += [mse100, np.mean((r500 - y[va]) ** 2) / len(splits)]
    fit_s = t_train + t_100 + t_500
    return {"dataset": dataset, "rows": int(X.shape[0]), "combinations": len(combos), "inner_folds": len(splits),
            "predictions": total, "bit_equal_share": equal / total, "max_abs_diff": worst_abs,
            "max_rel_diff": worst_rel,
            "max_cv_error_diff_500": float(np.abs(err_own[:, 1] - err_reuse[:, 1]).max()),
            "cv_errors_500_identical": bool((err_own[:, 1] == err_reuse[:, 1]).all()),
            "chosen_500_same": int(err_own[:, 1].argmin()) == int(err_reuse[:, 1].argmin()),
            "inner_cv_s": fit_s, "train_s": t_train, "predict_100_s": t_100, "predict_500_s": t_500,
            "predict_reused_rest_s": t_rest,
            "saved_share_of_inner_cv": (t_500 - t_rest) / fit_s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="delta-ailerons,kinematics")
    ap.add_argument("--output", default=str(REPO / "results" / "lgbm-reuse.json"))
    args = ap.parse_args(argv)
    data_dir = os.environ.get("RFBENCH_DATA_DIR")
    rows = [measure(d, data_dir) for d in args.datasets.split(",")]
    out = {"what": "LightGBM's 500-tree validation predictions reusing the 100-tree ones, against its own "
                   "(bench/perf/lgbm_reuse.py; one core, timings on a loaded development machine)",
           "rows": rows, "bit_identical": all(r["bit_equal_share"] == 1.0 for r in rows)}
    from rfbench.store import atomic_write_text

    atomic_write_text(Path(args.output), json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
