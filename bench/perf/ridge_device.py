"""Fit times of the ridge-based methods on a device against the NumPy path (issue 38 item 2).

    python bench/perf/ridge_device.py --device cuda [--repeats 3] [--output results/ridge-device.json]
    python bench/perf/ridge_device.py --device cpu,cuda        # the baseline in the same process
    python bench/perf/ridge_device.py --device torch-cpu --quick   # CI-sized: shows that it runs

Cases (synthetic data of kinematics' shape, d = 8, inputs standardised, a smooth target plus noise;
the estimators as the registry runs them, 5 inner folds, seeded):

* ``rff-gauss-100`` / ``rff-gauss-500``: RFFRegressor (Gaussian kernel, phase map, the ten
  bandwidths, λ by the continuous 1-D CV search) at m = 7000 training rows, n = 100 and 500;
* ``rff-gauss-grid-500``: the same with λ from the 49-point grid;
* ``krr-c20`` / ``krr``: KRRRegressor's exact variant at m = 2000 (one bandwidth constant c = 20,
  and the registry's ``krr``, c by CV over seven values: seven times the folds).

For each case and device: the median wall time of ``--repeats`` fits (after one untimed warm-up
fit on the device, which pays for CUDA's context and cuSOLVER's handles), the chosen
hyper-parameters and the test MSE on 1000 held-out rows, so that two devices' lines can be compared.
``--threads T`` (default 1) limits BLAS/OpenMP to T threads and passes ``n_jobs=T``, as the
runner's ``--threads`` does. A JSON document is printed (and written to ``--output``).

First reading (2026-11-27, a lent NVIDIA H200 machine with 16 cores, torch 2.11.0+cu130; a short
run: cuda medians of 2 fits, cpu one fit on one thread; not a committed result):

    case            cpu (NumPy, 1 thread)   cuda     same choice?
    rff-gauss-100   0.78 s                  0.24 s   σ same, λ 3e-10 rel., test MSE 9e-12 rel.
    rff-gauss-500   5.67 s                  0.36 s   σ same, λ 6.40e-16 vs 6.30e-16 (flat at rounding
                                                     level), test MSE 2.7e-5 rel.
    krr-c20         4.83 s                  0.25 s   order and λ same, test MSE 1e-15 rel.
    krr (7 c)       not run (≈ 7 × krr-c20) 1.83 s   —
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rfbench.methods.rff import RFFRegressor  # noqa: E402
from rfbench.methods.salsa import KRRRegressor  # noqa: E402


def synthetic(m: int, d: int = 8, test: int = 1000, seed: int = 0):
    """(X, y, X_test, y_test): kinematics' shape (d = 8), a smooth non-linear target with noise,
    inputs standardised on the training rows and the target scaled to range one (the protocol's)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(m + test, d))
    y = (np.sin(2.0 * X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.3 * np.tanh(X[:, 4:].sum(axis=1))
         + 0.1 * rng.standard_normal(m + test))
    mu, sd = X[:m].mean(axis=0), X[:m].std(axis=0)
    X = (X - mu) / sd
    lo, hi = y[:m].min(), y[:m].max()
    y = (y - lo) / (hi - lo)
    return X[:m], y[:m], X[m:], y[m:]


def cases(quick: bool):
    m_rff, m_krr = (1500, 400) if quick else (7000, 2000)
    out = {
        "rff-gauss-100": (m_rff, lambda dev, t: RFFRegressor(kernel="gaussian", n_features=100, cv=5,
                                                              random_state=0, n_jobs=t, device=dev)),
        "rff-gauss-500": (m_rff, lambda dev, t: RFFRegressor(kernel="gaussian", n_features=100 if quick else 500,
                                                              cv=5, random_state=0, n_jobs=t, device=dev)),
        "rff-gauss-grid-500": (m_rff, lambda dev, t: RFFRegressor(kernel="gaussian", n_features=100 if quick else 500,
                                                                   lambda_search="grid", cv=5, random_state=0,
                                                                   n_jobs=t, device=dev)),
        "krr-c20": (m_krr, lambda dev, t: KRRRegressor(c_grid=None, cv=5, random_state=0, n_jobs=t, device=dev)),
        "krr": (m_krr, lambda dev, t: KRRRegressor(cv=5, random_state=0, n_jobs=t, device=dev)),
    }
    return out


def _warm_up(device: str) -> float:
    """One small fit of each estimator on the device (CUDA context, cuSOLVER handles); seconds."""
    t0 = time.perf_counter()
    if device != "cpu":
        X, y, _, _ = synthetic(300, test=1)
        RFFRegressor(n_features=20, cv=3, bandwidths=[1.0], random_state=0, device=device).fit(X, y)
        KRRRegressor(c_grid=None, cv=3, random_state=0, device=device).fit(X, y)
    return time.perf_counter() - t0


def run(devices, repeats: int, threads: int, quick: bool, only=None) -> dict:
    doc = {"machine": platform.node(), "processor": platform.processor(), "python": platform.python_version(),
           "threads": threads, "repeats": repeats, "quick": quick, "devices": {}}
    try:
        import torch

        doc["torch"] = torch.__version__
        if torch.cuda.is_available():
            doc["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        doc["torch"] = None
    data: dict = {}
    for device in devices:
        with threadpool_limits(limits=threads):
            entry = {"warm_up_s": round(_warm_up(device), 3), "cases": {}}
            for name, (m, make) in cases(quick).items():
                if only and name not in only:
                    continue
                if m not in data:
                    data[m] = synthetic(m)
                X, y, X_te, y_te = data[m]
                times, est = [], None
                for _ in range(repeats):
                    est = make(device, threads)
                    t0 = time.perf_counter()
                    est.fit(X, y)
                    times.append(time.perf_counter() - t0)
                entry["cases"][name] = {
                    "m": m, "median_s": round(statistics.median(times), 4), "times_s": [round(t, 4) for t in times],
                    "best_params": est.best_params_,
                    "test_mse": float(np.mean((est.predict(X_te) - y_te) ** 2)),
                }
                print(f"{device:>9} {name:<20} median {statistics.median(times):8.3f} s  {est.best_params_}",
                      file=sys.stderr, flush=True)
        doc["devices"][device] = entry
    if len(devices) > 1:
        base = doc["devices"][devices[0]]["cases"]
        doc["speedup_vs_" + devices[0]] = {
            dev: {name: round(base[name]["median_s"] / c["median_s"], 2) for name, c in doc["devices"][dev]["cases"].items()}
            for dev in devices[1:]}
    return doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu | torch-cpu | cuda, or several separated by commas")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads and n_jobs (default 1)")
    ap.add_argument("--cases", default=None, help="only these cases (comma-separated)")
    ap.add_argument("--quick", action="store_true", help="small sizes (m = 1500 / 400, n = 100): a smoke run")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    devices = [d.strip() for d in args.device.split(",") if d.strip()]
    from rfbench.methods.device import check_device

    for d in devices:
        check_device(d)
    doc = run(devices, args.repeats, args.threads, args.quick, args.cases.split(",") if args.cases else None)
    text = json.dumps(doc, indent=1, default=float)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
