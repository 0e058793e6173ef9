"""Peer benchmark: rfbench's rff-gauss against the pipeline a user would write with scikit-learn.

Peer: StandardScaler + RBFSampler + Ridge in GridSearchCV (5-fold) over the same bandwidth grid
(σ ∈ logspace(−3, 2, 10), γ = 1 / (2σ²)) and the same λ grid (alpha = m_inner · λ), on the same
outer folds, inner folds and n. Both sides run single-threaded, side by side in one process, so
the ratio is measured under the same conditions. Output scaling and metric are the protocol's
(RMSE × 100 of range-normalised outputs).

    python bench/perf/peer_rff.py --datasets ailerons,cal-housing --features 100 --folds 2 --output results/peer-rff-100.json
    python bench/perf/peer_rff.py --datasets ailerons,cal-housing --features 500 --folds 1 --output results/peer-rff-500.json

Target (issue 2): rfbench ≥ 3× faster at equal error.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from rfbench import protocol as proto
from rfbench.data import load
from rfbench.methods.rff import DEFAULT_BANDWIDTHS, RFFRegressor
from rfbench.methods.ridge import DEFAULT_LAMBDAS
from rfbench.store import atomic_write_text


def peer_fit(X, y, n, inner, seed):
    m_inner = int(np.mean([len(tr) for tr, _ in inner]))
    pipe = make_pipeline(StandardScaler(), RBFSampler(n_components=n, random_state=seed), Ridge())
    grid = {"rbfsampler__gamma": list(1.0 / (2 * DEFAULT_BANDWIDTHS**2)),
            "ridge__alpha": list(m_inner * DEFAULT_LAMBDAS)}
    return GridSearchCV(pipe, grid, cv=inner, scoring="neg_mean_squared_error", n_jobs=1).fit(X, y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="ailerons,cal-housing")
    ap.add_argument("--features", default="100,500")
    ap.add_argument("--folds", type=int, default=3, help="outer folds to time (of 10)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--output", default=None, help="write the rows as JSON here")
    args = ap.parse_args()
    protocol = proto.Protocol()
    rows = []
    with threadpool_limits(limits=1):
        for name in args.datasets.split(","):
            loaded = load(name, args.data_dir)
            X, y = loaded.X, loaded.y
            splits = proto.outer_splits(protocol, y, "regression")
            for n in (int(v) for v in args.features.split(",")):
                for fold in range(args.folds):
                    tr, te = splits[fold]
                    sc = proto.Scaler.fit(X[tr], y[tr], "regression")
                    ytr, yte = sc.y(y[tr]), sc.y(y[te])
                    inner = proto.inner_splits(protocol, ytr, "regression", fold)
                    t0 = time.perf_counter()
                    ours = RFFRegressor(kernel="gaussian", n_features=n, cv=inner, random_state=fold)
                    ours.fit(sc.x(X[tr]), ytr)
                    err_ours = proto.score("regression", yte, ours.predict(sc.x(X[te])))
                    t_ours = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    peer = peer_fit(X[tr], ytr, n, inner, fold)   # its own StandardScaler inside
                    err_peer = proto.score("regression", yte, peer.predict(X[te]))
                    t_peer = time.perf_counter() - t0
                    row = {"dataset": name, "n": n, "fold": fold, "rfbench_s": t_ours, "peer_s": t_peer,
                           "ratio": t_peer / t_ours, "rfbench_error": err_ours, "peer_error": err_peer,
                           "rfbench_params": ours.best_params_, "peer_params": peer.best_params_}
                    rows.append(row)
                    print(f"{name:12s} n={n:4d} fold {fold}: rfbench {t_ours:7.1f}s err {err_ours:6.2f} | "
                          f"sklearn {t_peer:7.1f}s err {err_peer:6.2f} | ratio {t_peer / t_ours:5.1f}x", flush=True)
                    if args.output:  # after every fold: a long benchmark keeps what it measured
                        atomic_write_text(Path(args.output), json.dumps(rows, indent=1, default=str))
    print("\nsummary (medians over folds)")
    for name in args.datasets.split(","):
        for n in (int(v) for v in args.features.split(",")):
            sel = [r for r in rows if r["dataset"] == name and r["n"] == n]
            print(f"{name:12s} n={n:4d}: rfbench {np.median([r['rfbench_s'] for r in sel]):7.1f}s, "
                  f"sklearn {np.median([r['peer_s'] for r in sel]):7.1f}s, ratio "
                  f"{np.median([r['ratio'] for r in sel]):5.1f}x; error {np.mean([r['rfbench_error'] for r in sel]):.2f}"
                  f" vs {np.mean([r['peer_error'] for r in sel]):.2f}")


if __name__ == "__main__":
    main()
