"""Can à la carte's Gram matrices be formed in float32? Speed, accuracy and the BLAS floor.

One evaluation of ALC's objective (rfbench.methods.alc.alc_objective) forms five fold Gram matrices
of the m × p design (p = 2n + 1) and factors five p × p ridge matrices. This script measures, on one
outer fold of a dataset exactly as the runner prepares it (one BLAS thread):

* the machine's one-core floor: dgemm rate, the Gram matrices (m·p² flops) and the Cholesky
  factorisations (5·p³/3 flops) at that rate, against the measured evaluation;
* the evaluation with float64 Gram matrices (what ALC uses), float32 Gram matrices, and float32
  Gram matrices and Cholesky factors (median of repeats, same θ₀ as the first restart);
* the accuracy of the float32 variants along a real run: ALC from the runner's initial solutions
  (``--restarts`` restarts × 20 iterations, then ``--final-iter`` for the best), every evaluation
  computed both ways; relative error of the value and of the gradient, and
  ρ = ε₃₂ · (1 + s Σ_q ν_q⁴) / λ, float32's rounding of the Gram matrix against the ridge term
  (trace(G)/m = 1 + s Σ_q ν_q⁴ because sin² + cos² = 1).

    python bench/perf/alc_precision.py [--dataset kinematics] [--features 500] [--fold 0]
        [--restarts 3] [--final-iter 40] [--output results/alc-precision.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from rfbench import protocol as proto
from rfbench import registry
from rfbench.data.sources import DataSources
from rfbench.execution.tasks import fold_task
from rfbench.methods import alc, cvgrad
from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.cvgrad import Workspace, contiguous_folds

F32 = np.finfo(np.float32).eps
FLOAT64_KFOLD = cvgrad._ridge_cv_grad_kfold


def _median_ms(fn, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def _cholesky32(P):
    """The ridge matrix factored in float32 (returned in float64 for SciPy's solve)."""
    return scipy.linalg.cholesky(P.astype(np.float32), check_finite=False).astype(np.float64), False


def _cholesky32_in_place(fill, P):
    """:func:`_cholesky32` in the form of cvgrad's in-place factorisation (the serial path's)."""
    fill(P)
    return _cholesky32(P)


def variant(name: str):
    """Install one precision variant of the k-fold path: float64, gram32, gram32+chol32."""
    kfold = FLOAT64_KFOLD if name == "float64" else functools.partial(FLOAT64_KFOLD, gram_dtype=np.float32)
    cvgrad._ridge_cv_grad_kfold = kfold
    chol32 = name == "gram32+chol32"
    cvgrad._cho_factor = _cholesky32 if chol32 else ORIGINAL_CHO
    cvgrad._cho_factor_in_place = _cholesky32_in_place if chol32 else ORIGINAL_CHO_IN_PLACE


ORIGINAL_CHO = cvgrad._cho_factor
ORIGINAL_CHO_IN_PLACE = cvgrad._cho_factor_in_place
VARIANTS = ("float64", "gram32", "gram32+chol32")


def floor(X: np.ndarray, p: int) -> dict:
    """One-core dgemm rate on the design's shape, and the evaluation's BLAS floor at that rate."""
    m = X.shape[0]
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((m, p)), rng.standard_normal((m, p))
    gemm_ms = _median_ms(lambda: A.T @ B, 3)
    rate = 2 * m * p * p / (gemm_ms / 1e3)
    P = A.T @ A + m * np.eye(p)
    return {"gemm_gflops": rate / 1e9,
            "gram_flops": m * p * p, "gram_floor_ms": 1e3 * m * p * p / rate,
            "gram_syrk_ms": _median_ms(lambda: A.T @ A, 3),
            "cholesky_flops_x5": 5 * p ** 3 / 3, "cholesky_floor_ms_x5": 1e3 * 5 * p ** 3 / 3 / rate,
            "cholesky_ms_x5": 5 * _median_ms(lambda: cvgrad._cho_factor_in_place(lambda out: np.copyto(out, P),
                                                                                  np.empty_like(P)))}


def accuracy_along_a_run(task, n: int, restarts: int, final_iter: int) -> dict:
    """Every evaluation of a real ALC fit computed with float64 (which drives the run) and with
    each float32 variant; quantiles of the relative errors and of ρ."""
    log = []
    objective = alc.alc_objective

    def both(theta, X, y, U, splits, y_var=1.0, work=None):
        variant("float64")
        value, grad = objective(theta, X, y, U, splits, y_var, work)
        Q, s, d = U.shape
        _, _, nu, lam = alc.unpack(theta, Q, d)
        row = {"rho": F32 * (1 + s * float(np.sum(nu ** 4))) / lam, "lambda": lam}
        for name in VARIANTS[1:]:
            variant(name)
            try:
                v, g = objective(theta, X, y, U, splits, y_var, Workspace())
                row[name] = (abs(v - value) / abs(value), float(np.linalg.norm(g - grad) / np.linalg.norm(grad)))
            except np.linalg.LinAlgError:
                row[name] = (np.inf, np.inf)
        variant("float64")
        log.append(row)
        return value, grad

    alc.alc_objective = both
    try:
        params = {**task.common, "n_jobs": 1, "n_restarts": restarts, "final_iter": final_iter}
        task.cls(n_features=n, **params).fit(task.X_tr, task.y_tr)
    finally:
        alc.alc_objective = objective
        variant("float64")
    qs = (0.5, 0.9, 1.0)
    out = {"evaluations": len(log),
           "rho": {f"q{q}": float(np.quantile([r["rho"] for r in log], q)) for q in (0.0, *qs)}}
    for name in VARIANTS[1:]:
        errs = np.array([r[name] for r in log])
        out[name] = {"value_rel": {f"q{q}": float(np.quantile(errs[:, 0], q)) for q in qs},
                     "grad_rel": {f"q{q}": float(np.quantile(errs[:, 1], q)) for q in qs}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="kinematics")
    ap.add_argument("--features", type=int, default=500)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--restarts", type=int, default=3)
    ap.add_argument("--final-iter", type=int, default=40)
    ap.add_argument("--data-dir")
    ap.add_argument("--output", default="results/alc-precision.json")
    args = ap.parse_args()
    task = fold_task(args.dataset, "alc", args.fold, proto.Protocol(), DataSources.from_settings(args.data_dir), 1, registry=registry.load())
    est = task.cls(n_features=args.features, **task.common)
    # the first restart's initial solution, drawn as ALCRegressor.fit draws it
    rng = as_generator(task.common["random_state"])
    splits, X, y = contiguous_folds(resolve_cv(est.cv, task.X_tr.shape[0], rng), task.X_tr,
                                    task.y_tr - task.y_tr.mean())
    Q, s = est.n_components, args.features // est.n_components
    [(theta0, U)] = alc.initial_solutions(X, task.y_tr, Q, s, 1, rng)
    out = {"dataset": args.dataset, "n_features": args.features, "fold": args.fold,
           "m": int(X.shape[0]), "p": 2 * Q * s + 1}
    with threadpool_limits(limits=1):
        out["floor"] = floor(X, out["p"])
        work = Workspace()
        out["evaluation_ms"] = {}
        for name in VARIANTS:
            variant(name)
            out["evaluation_ms"][name] = _median_ms(lambda: alc.alc_objective(theta0, X, y, U, splits, 1.0, work))
        variant("float64")
        out["accuracy"] = accuracy_along_a_run(task, args.features, args.restarts, args.final_iter)
    ev = out["evaluation_ms"]
    fl = out["floor"]
    floor_ms = fl["gram_floor_ms"] + fl["cholesky_floor_ms_x5"]
    out["evaluation_over_floor"] = ev["float64"] / floor_ms
    print(f"{args.dataset}, n = {args.features}, outer fold {args.fold}: m = {out['m']}, p = {out['p']}, one thread")
    print(f"  dgemm {fl['gemm_gflops']:.1f} GFLOP/s; Gram m·p² floor {fl['gram_floor_ms']:.0f} ms (syrk measured "
          f"{fl['gram_syrk_ms']:.0f} ms), 5 Cholesky floor {fl['cholesky_floor_ms_x5']:.0f} ms (measured "
          f"{fl['cholesky_ms_x5']:.0f} ms)")
    print(f"  evaluation: float64 {ev['float64']:.0f} ms = {out['evaluation_over_floor']:.2f} × the floor; "
          f"float32 Gram {ev['gram32']:.0f} ms ({ev['float64'] / ev['gram32']:.2f}×); float32 Gram + Cholesky "
          f"{ev['gram32+chol32']:.0f} ms ({ev['float64'] / ev['gram32+chol32']:.2f}×)")
    acc = out["accuracy"]
    print(f"  along a run ({acc['evaluations']} evaluations): rho median {acc['rho']['q0.5']:.2g}, max {acc['rho']['q1.0']:.2g}")
    for name in VARIANTS[1:]:
        a = acc[name]
        print(f"    {name}: value rel. error median {a['value_rel']['q0.5']:.1e} max {a['value_rel']['q1.0']:.1e}; "
              f"gradient median {a['grad_rel']['q0.5']:.1e}, 90 % {a['grad_rel']['q0.9']:.1e}, max {a['grad_rel']['q1.0']:.1e}")
    Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    print(f"written: {args.output}")


if __name__ == "__main__":
    main()
