"""GBRFF paper §4.4 / Fig. 4: fit + predict time as the number of samples grows.

Setting of the paper: scikit-learn ``make_classification`` data of 150 × 1.5^k samples (default
generator arguments), the whole set used for training and prediction, 100 boosting iterations,
fixed hyper-parameters (no CV): GBRFF2 with γ = 1/d and λ = 0; GBRFF1 with K = 10, γ = 1/d, β = 1;
LightGBM with depth 5 (num_leaves 32). A method stops growing m once one of its points takes more
than ``--limit`` seconds (the paper used 1000 s). One thread per method (BLAS and LightGBM).

Reports the time of every point and the slope of log(time) against log(m) fitted over the points
with m ≥ ``--slope-from`` (below that, fixed per-iteration overheads dominate); a slope of 1 means
linear scaling. Writes ``results/gbrff-scaling.json`` (resumable: finished points are kept).

    python bench/perf/gbrff_scaling.py [--limit 60] [--max-k 20] [--methods gbrff2,gbrff1,lgbm]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_limits

from rfbench.methods.gbrff import GBRFF1Classifier, GBRFF2Classifier
from rfbench.store import atomic_write_text

OUT = Path(__file__).resolve().parents[2] / "results" / "gbrff-scaling.json"


def make_model(name: str):
    if name == "gbrff2":
        return GBRFF2Classifier(n_features=100, gamma_grid=(1.0,), lambda_grid=(0.0,), random_state=1, n_jobs=1)
    if name == "gbrff1":
        return GBRFF1Classifier(n_features=100, n_random_features=10, gamma_grid=(1.0,), beta_grid=(1.0,),
                                random_state=1, n_jobs=1)
    if name == "lgbm":
        import lightgbm

        return lightgbm.LGBMClassifier(n_estimators=100, max_depth=5, num_leaves=32, random_state=1,
                                       n_jobs=1, verbose=-1)
    raise SystemExit(f"unknown method '{name}'; use gbrff2, gbrff1 or lgbm")


def slope(points: list[dict], m_from: int) -> float | None:
    pts = [(p["m"], p["seconds"]) for p in points if p["m"] >= m_from]
    if len(pts) < 3:
        return None
    m, t = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(m, t, 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="gbrff2,gbrff1,lgbm")
    ap.add_argument("--limit", type=float, default=60.0, help="stop a method after a point slower than this (s)")
    ap.add_argument("--max-k", type=int, default=20, help="largest k (m = 150 · 1.5^k)")
    ap.add_argument("--slope-from", type=int, default=2000)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    out = Path(args.out)
    state = json.loads(out.read_text()) if out.exists() else {}
    state.setdefault("setting", "make_classification(m, random_state=k); fit + predict on all m; 100 iterations; "
                                "gbrff2 g=1 lambda=0; gbrff1 K=10 g=1 beta=1; lgbm depth 5; 1 thread")
    results = state.setdefault("methods", {})
    for name in args.methods.split(","):
        points = results.setdefault(name, {}).setdefault("points", [])
        done = {p["k"] for p in points}
        for k in range(args.max_k + 1):
            if points and points[-1]["seconds"] > args.limit:
                break
            if k in done:
                continue
            m = int(round(150 * 1.5**k))
            X, y = make_classification(n_samples=m, random_state=k)
            with threadpool_limits(limits=1):
                t0 = time.perf_counter()
                model = make_model(name).fit(X, y)
                acc = float(np.mean(model.predict(X) == y))
                seconds = time.perf_counter() - t0
            points.append({"k": k, "m": m, "seconds": seconds, "train_accuracy": acc})
            results[name]["slope"] = slope(points, args.slope_from)
            atomic_write_text(out, json.dumps(state, indent=1) + "\n")
            print(f"{name:7s} k={k:2d} m={m:8d}  {seconds:9.3f} s  acc={acc:.3f}", flush=True)
        results[name]["slope"] = slope(points, args.slope_from)
        atomic_write_text(out, json.dumps(state, indent=1) + "\n")
    for name, r in results.items():
        s = r.get("slope")
        print(f"{name}: log-log slope (m ≥ {args.slope_from}) = {s:.2f}" if s is not None else f"{name}: too few points")


if __name__ == "__main__":
    main()
