"""GBRFF paper §4.4 / Fig. 4: fit + predict time as the number of samples grows.

(Issue 23 calls this figure "Fig. 3"; the paper numbers it Fig. 4.) Setting of the paper:
scikit-learn ``make_classification`` data of 150 × 1.5^k samples (default generator arguments), the
whole set used for training and prediction, 100 iterations (or landmarks), fixed hyper-parameters
(no CV): GBRFF2 with γ = 1/d and λ = 0; GBRFF1 and PBRFF with K = 10, γ = 1/d, β = 1; LightGBM with
depth 5 (num_leaves 32); C = 1 for the methods with an SVM or SVR (PBRFF, GFC, BMKR). GFC is the
paper's column, the reference code's variant (gfc-gbrff). A method stops growing m once one of its
points takes more than ``--limit`` seconds (the paper used 1000 s). One thread per method (BLAS and
LightGBM).

Reports the time of every point and the slope of log(time) against log(m) fitted over the points
with m ≥ ``--slope-from`` (below that, fixed per-iteration overheads dominate), or over a method's
last three points when it stopped before (rfbench.reporting.figures_gbrff.fitted_slope); a slope of 1 means
linear scaling. Writes ``results/gbrff-scaling.json`` (resumable: finished points are kept) and,
with ``--plot``, the figure ``results/gbrff-fig4-time.png`` (and .pdf) from the JSON.

    python bench/perf/gbrff_scaling.py [--limit 60] [--max-k 20] [--methods gbrff2,gbrff1,lgbm,pbrff,gfc-gbrff,bmkr]
    python bench/perf/gbrff_scaling.py --plot-only       # redraw the figure from the JSON
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_limits

from rfbench.errors import UsageError
from rfbench.methods.bmkr import BMKRClassifier
from rfbench.methods.gbrff import GBRFF1Classifier, GBRFF2Classifier
from rfbench.methods.gfc_gbrff import GFCGBRFFClassifier
from rfbench.methods.pbrff import PBRFFClassifier
from rfbench.reporting.figures_gbrff import fitted_slope, plot_scaling, read_json
from rfbench.store import atomic_write_text

OUT = Path(__file__).resolve().parents[2] / "results" / "gbrff-scaling.json"
FIGURE = OUT.with_name("gbrff-fig4-time.png")
METHODS = ("gbrff2", "gbrff1", "lgbm", "pbrff", "gfc-gbrff", "bmkr")


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
    if name == "pbrff":
        return PBRFFClassifier(n_features=100, n_random_features=10, gamma_grid=(1.0,), beta_grid=(1.0,),
                               C_grid=(1.0,), random_state=1, n_jobs=1)
    if name == "gfc-gbrff":
        return GFCGBRFFClassifier(n_features=100, C_grid=(1.0,), random_state=1, n_jobs=1)
    if name == "bmkr":
        return BMKRClassifier(n_features=100, C_grid=(1.0,), random_state=1, n_jobs=1)
    raise UsageError(f"unknown method '{name}'; use {', '.join(METHODS)}")


def slope(points: list[dict], m_from: int) -> float | None:
    return fitted_slope(points, m_from)[0]


def plot(path: Path, m_from: int) -> None:
    for line in plot_scaling(read_json(path, "scaling JSON"), FIGURE if path == OUT else path.with_suffix(".png"),
                             m_from):
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--limit", type=float, default=60.0, help="stop a method after a point slower than this (s)")
    ap.add_argument("--max-k", type=int, default=20, help="largest k (m = 150 · 1.5^k)")
    ap.add_argument("--slope-from", type=int, default=2000)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--plot", action="store_true", help="also draw the figure from the JSON at the end")
    ap.add_argument("--plot-only", action="store_true", help="only draw the figure from the JSON")
    args = ap.parse_args()
    out = Path(args.out)
    names = [n.strip() for n in args.methods.split(",") if n.strip()]
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise SystemExit(f"error: unknown method(s) {', '.join(unknown)}; use {', '.join(METHODS)}")
    if args.plot_only:
        try:
            plot(out, args.slope_from)
        except UsageError as exc:
            raise SystemExit(f"error: {exc}") from None
        return
    state = json.loads(out.read_text()) if out.exists() else {}
    state["setting"] = ("make_classification(m, random_state=k); fit + predict on all m; 100 iterations; "
                        "gbrff2 g=1 lambda=0; gbrff1 and pbrff K=10 g=1 beta=1; lgbm depth 5; "
                        "C=1 for pbrff, gfc-gbrff, bmkr; 1 thread; seconds = process CPU time (wall_seconds beside it)")
    state["limit_s"] = args.limit
    results = state.setdefault("methods", {})
    for name in names:
        # points are timed in process CPU seconds (one thread, so CPU time = the work, whatever else
        # runs on the machine); a point measured before, in wall seconds only, is measured again
        points = results.setdefault(name, {}).setdefault("points", [])
        points[:] = [p for p in points if "cpu_seconds" in p]
        done = {p["k"] for p in points}
        for k in range(args.max_k + 1):
            if points and points[-1]["seconds"] > args.limit:
                break
            if k in done:
                continue
            m = int(round(150 * 1.5**k))
            X, y = make_classification(n_samples=m, random_state=k)
            with threadpool_limits(limits=1):
                t0, c0 = time.perf_counter(), time.process_time()
                model = make_model(name).fit(X, y)
                acc = float(np.mean(model.predict(X) == y))
                seconds, wall = time.process_time() - c0, time.perf_counter() - t0
            points.append({"k": k, "m": m, "seconds": seconds, "cpu_seconds": seconds, "wall_seconds": wall,
                           "train_accuracy": acc})
            results[name]["slope"] = slope(points, args.slope_from)
            atomic_write_text(out, json.dumps(state, indent=1) + "\n")
            print(f"{name:7s} k={k:2d} m={m:8d}  {seconds:9.3f} s CPU ({wall:.3f} s wall)  acc={acc:.3f}", flush=True)
        results[name]["slope"] = slope(points, args.slope_from)
        atomic_write_text(out, json.dumps(state, indent=1) + "\n")
    for name, r in results.items():
        s, m0 = fitted_slope(r.get("points", []), args.slope_from)
        print(f"{name}: log-log slope (m ≥ {m0}) = {s:.2f}" if s is not None else f"{name}: too few points")
    if args.plot:
        plot(out, args.slope_from)


if __name__ == "__main__":
    main()
