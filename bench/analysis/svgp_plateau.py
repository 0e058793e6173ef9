"""SVGP on the UCI splits: does its early stopping end training on a plateau before the fit has begun?

``svgp`` stops after ``patience`` = 10 epochs without a lower held-out MSE. In 37 of the 260 n = 100
tasks of ``results/uci-splits`` its best epoch is the first or second, with the held-out MSE near 1
(the standardised target's variance: the mean predictor). That is right where there is nothing to
learn, and wrong where the length-scales only need longer to leave their start (ℓ_j = √d): an ARD
kernel on pumadyn32nm, where two of 32 inputs matter, sits at the mean for many epochs before the
relevant ℓ_j shrink. This refits the runner's own task (:func:`rfbench.execution.tasks.fold_task`, the
record's seed) as recorded and with the stopping off (``patience`` = ``max_epochs``: all 200 epochs,
the best held-out epoch kept), and prints the held-out MSE every ten epochs. Errors: test RMSE on the
target as stored.

    RFBENCH_DATA_DIR=../shared/datasets python bench/analysis/svgp_plateau.py \
        [--sets uci-pumadyn32nm uci-forest uci-solar uci-breastcancer uci-fertility] [--split 0] \
        [--output results/svgp-plateau.json]

One thread (torch's), needs the ``gp`` extra; about five minutes on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from rfbench import protocol as proto
from rfbench import registry
from rfbench.execution.tasks import fold_task

N_FEATURES = 100


def fit(dataset: str, split: int, reg, **overrides) -> dict:
    protocol = proto.Protocol("published")
    task = fold_task(dataset, "svgp", split, protocol, None, registry=reg)
    start = time.process_time()
    est = task.cls(n_features=N_FEATURES, **{**task.common, **overrides}).fit(task.X_tr, task.y_tr)
    error = proto.score(task.ds.task, task.y_te, est.predict(task.X_te), protocol.target_scaling, task.y_unit)
    return {"rmse": float(error), "epochs": int(est.n_epochs_), "best_epoch": int(est.best_epoch_),
            "best_validation_mse": float(np.min(est.validation_mse_)),
            "validation_mse_every_10_epochs": [round(float(v), 4) for v in est.validation_mse_[::10]],
            "cpu_s": round(time.process_time() - start, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+",
                    default=["uci-pumadyn32nm", "uci-forest", "uci-solar", "uci-breastcancer", "uci-fertility"])
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--output", default="results/svgp-plateau.json")
    args = ap.parse_args(argv)
    reg = registry.load()
    max_epochs = reg.method("svgp").estimator_class("regression")().max_epochs
    cells = []
    with threadpool_limits(1):
        for dataset in args.sets:
            recorded = fit(dataset, args.split, reg)
            unstopped = fit(dataset, args.split, reg, patience=max_epochs)
            cells.append({"dataset": dataset, "split": args.split, "as_recorded": recorded, "no_early_stop": unstopped})
            for name, c in (("as recorded", recorded), ("no early stop", unstopped)):
                print(f"{dataset} split {args.split} {name}: RMSE {c['rmse']:.4g}, {c['epochs']} epochs, best "
                      f"{c['best_epoch']}, held-out MSE every 10 epochs {c['validation_mse_every_10_epochs']}", flush=True)
    out = {"n_features": N_FEATURES, "cells": cells,
           "machine": f"{platform.node()} {platform.processor() or platform.machine()}, one thread, shared 2-core VM"}
    Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
