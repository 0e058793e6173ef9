"""Which LAPACK eigensolver should SALSA's and KRR's exact inner CV use? Each (order, inner fold) is
one symmetric eigendecomposition of an m_tr × m_tr kernel (rfbench.methods.salsa._ExactEngine.folds),
and SciPy's default driver (syevr, MRRR) is slow on the clustered spectra of these kernels. This
measures, side by side in one process, on one outer fold of real sets exactly as the runner builds it
(rfbench.execution.tasks.fold_task, published splits):

* ``fits``: the whole KRR and SALSA fits (inner CV, final solve) with syevr (the old code) and
  syevd (divide and conquer, what salsa._scipy_eigh now asks for): fit time, the chosen
  hyper-parameters and the test predictions' largest difference;
* ``folds``: the inner-fold eigendecompositions alone of KRR's kernel at three bandwidth constants
  of its grid on a larger set (gas), each driver's median time.

    python bench/perf/salsa_eigh.py [--fits uci-wine,uci-airfoil] [--folds uci-gas] [--output results/salsa-eigh.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def _driver(name: str):
    import scipy.linalg

    return lambda A: scipy.linalg.eigh(A, overwrite_a=True, check_finite=False, driver=name)


def _task(dataset: str, method: str):
    from rfbench import registry
    from rfbench.execution.tasks import fold_task
    from rfbench.protocol import Protocol

    return fold_task(dataset, method, 0, Protocol("published"), None, threads=1, registry=registry.load())


def compare_fits(dataset: str, method: str) -> dict:
    """The runner's fit of (dataset, method, n = 100, split 0) with each driver."""
    from unittest import mock

    from rfbench.methods import salsa

    task = _task(dataset, method)
    out = {"dataset": dataset, "method": method, "rows": int(task.X_tr.shape[0])}
    preds, params = {}, {}
    for name in ("evr", "evd"):
        with mock.patch.object(salsa, "_scipy_eigh", _driver(name)):
            t = time.perf_counter()
            est = task.cls(n_features=100, **task.common).fit(task.X_tr, task.y_tr)
            out[f"fit_s_{name}"] = round(time.perf_counter() - t, 3)
        preds[name], params[name] = est.predict(task.X_te), est.best_params_
    out["speedup"] = round(out["fit_s_evr"] / out["fit_s_evd"], 2)
    diff = np.abs(preds["evr"] - preds["evd"])
    out["max_rel_prediction_diff"] = float((diff / np.maximum(np.abs(preds["evr"]), 1e-300)).max())
    same_discrete, max_rel = True, 0.0
    for key, evr in params["evr"].items():
        evd = params["evd"][key]
        if not isinstance(evr, float):
            same_discrete &= evr == evd
        elif evr != 0:
            max_rel = max(max_rel, abs(evr - evd) / abs(evr))
    out["same_discrete_params"], out["max_rel_param_diff"] = bool(same_discrete), max_rel
    return out


def time_folds(dataset: str, constants=(5.0, 20.0, 320.0), repeats: int = 1) -> list[dict]:
    """Median time of each inner fold's eigendecomposition of KRR's product kernel, per driver."""
    from rfbench.methods.esp import esp_kernel, salsa_bandwidths

    task = _task(dataset, "krr")
    X, D = task.X_tr, task.X_tr.shape[1]
    rows = []
    for c in constants:
        K = esp_kernel(X, X, salsa_bandwidths(X, c), D)
        times = {"evr": [], "evd": []}
        for tr, _ in task.common["cv"]:
            K_tr = K[np.ix_(tr, tr)]
            for name in times:
                for _ in range(repeats):
                    A = K_tr.copy()
                    t = time.perf_counter()
                    _driver(name)(A)
                    times[name].append(time.perf_counter() - t)
        med = {name: float(np.median(v)) for name, v in times.items()}
        rows.append({"dataset": dataset, "c": c, "m_tr": int(len(task.common["cv"][0][0])),
                     "eigh_s_evr": round(med["evr"], 3), "eigh_s_evd": round(med["evd"], 3),
                     "speedup": round(med["evr"] / med["evd"], 2)})
    return rows


def main(argv=None) -> None:
    from threadpoolctl import threadpool_limits

    from rfbench.provenance import code_version, machine_info

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fits", default="uci-wine,uci-airfoil", help="sets whose whole KRR and SALSA fits are timed")
    ap.add_argument("--folds", default="uci-gas", help="sets whose inner-fold eigendecompositions are timed")
    ap.add_argument("--output", default=str(REPO / "results" / "salsa-eigh.json"))
    args = ap.parse_args(argv)
    with threadpool_limits(1):     # one BLAS thread: the runner's setting per task
        fits = [compare_fits(d, m) for d in args.fits.split(",") if d for m in ("krr", "salsa")]
        folds = [row for d in args.folds.split(",") if d for row in time_folds(d)]
    result = {"what": "SALSA/KRR exact inner CV: LAPACK syevr (SciPy's default) against syevd, one BLAS thread",
              "machine": machine_info(), "code": code_version(), "fits": fits, "folds": folds}
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n")
    from tabulate import tabulate

    print(tabulate(fits, headers="keys"))
    print(tabulate(folds, headers="keys"))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
