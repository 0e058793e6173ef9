"""Peer benchmark: rfbench's rff-gauss against the pipeline a user would write with scikit-learn.

Peer, as a competent scikit-learn user writes it: the inputs standardised once on the outer
training rows (StandardScaler, as rfbench's protocol scales them), then per bandwidth of the same
grid (σ ∈ logspace(−3, 2, 10), γ = 1 / (2σ²)) the RBFSampler features built once, and RidgeCV
over the same λ grid (alpha = m_inner · λ) on the same inner folds picks λ; the bandwidth with
the lowest inner-CV MSE wins and its RidgeCV (refitted on all training rows) predicts. The same
outer folds, inner folds and n. An earlier peer (GridSearchCV over the whole pipeline) rebuilt the
features for each of the 49 penalties and measured 127–358×: a strawman, not what a user writes.

Two peers, by how RidgeCV chooses λ (``--peer``): ``cv5`` (the default) gives it the same 5 inner
folds that rfbench tunes on (``RidgeCV(cv=inner)``, a refit per fold and penalty); ``loo`` keeps
RidgeCV's default, efficient leave-one-out (``cv=None``: one SVD of the features per bandwidth
gives every penalty's LOO error in closed form, alpha = m · λ on the m training rows), which a user
who leaves RidgeCV at its defaults gets (scored by neg_mean_squared_error as the cv5 peer is: the
same choice as its default scoring, the mean squared LOO error): another inner criterion than
rfbench's 5 folds, so the errors are not the same model's, and the table shows both.
Both sides run single-threaded, side by side in one process, so the ratio is measured under the
same conditions. Output scaling and metric are the protocol's (RMSE × 100 of range-normalised
outputs).

    python bench/perf/peer_rff.py --datasets ailerons,cal-housing --features 100 --folds 2 --output results/peer-rff-100.json
    python bench/perf/peer_rff.py --datasets ailerons,cal-housing --features 500 --folds 1 --output results/peer-rff-500.json
    python bench/perf/peer_rff.py --peer loo --features 100 --folds 2 --output results/peer-rff-loo-100.json
    python bench/perf/peer_rff.py --peer loo --features 500 --folds 1 --output results/peer-rff-loo-500.json

Target (issue 2): rfbench ≥ 3× faster at equal error. Issue 36 asked for the fair peer above.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from rfbench import protocol as proto
from rfbench import registry
from rfbench.data import load
from rfbench.methods.rff import DEFAULT_BANDWIDTHS, RFFRegressor
from rfbench.methods.ridge import DEFAULT_LAMBDAS
from rfbench.store import atomic_write_text

PEERS = {"cv5": "RidgeCV(cv=the 5 inner folds)", "loo": "RidgeCV(cv=None): efficient leave-one-out"}


def peer_fit(X, y, n, inner, seed, peer="cv5"):
    """(fitted pipeline, best params): features once per bandwidth, RidgeCV over λ on the inner folds
    (``peer="cv5"``) or by its default efficient leave-one-out (``peer="loo"``)."""
    scaler = StandardScaler().fit(X)
    Xs = scaler.transform(X)
    if peer == "loo":
        alphas, cv = len(y) * DEFAULT_LAMBDAS, None
    else:
        alphas, cv = int(np.mean([len(tr) for tr, _ in inner])) * DEFAULT_LAMBDAS, inner
    best = None
    for gamma in 1.0 / (2 * DEFAULT_BANDWIDTHS**2):
        sampler = RBFSampler(gamma=gamma, n_components=n, random_state=seed).fit(Xs)
        ridge = RidgeCV(alphas=alphas, cv=cv, scoring="neg_mean_squared_error")
        ridge.fit(sampler.transform(Xs), y)
        if best is None or ridge.best_score_ > best[0]:
            best = (ridge.best_score_, sampler, ridge)
    _, sampler, ridge = best
    return make_pipeline(scaler, sampler, ridge), {"gamma": sampler.gamma, "alpha": ridge.alpha_,
                                                   "cv_mse": -best[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="ailerons,cal-housing")
    ap.add_argument("--features", default="100,500")
    ap.add_argument("--folds", type=int, default=3, help="outer folds to time (of 10)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--peer", choices=sorted(PEERS), default="cv5",
                    help="how the peer's RidgeCV picks λ: cv5, the same 5 inner folds (default); loo, RidgeCV's "
                         "default efficient leave-one-out")
    ap.add_argument("--output", default=None, help="write the rows as JSON here")
    args = ap.parse_args()
    protocol = proto.Protocol()
    rows = []
    reg = registry.load()
    with threadpool_limits(limits=1):
        for name in args.datasets.split(","):
            loaded = load(name, args.data_dir, registry=reg)
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
                    peer, peer_params = peer_fit(X[tr], ytr, n, inner, fold, args.peer)   # its own StandardScaler
                    err_peer = proto.score("regression", yte, peer.predict(X[te]))
                    t_peer = time.perf_counter() - t0
                    row = {"dataset": name, "n": n, "fold": fold, "rfbench_s": t_ours, "peer_s": t_peer,
                           "ratio": t_peer / t_ours, "rfbench_error": err_ours, "peer_error": err_peer,
                           "rfbench_params": ours.best_params_, "peer_params": peer_params,
                           "peer_cv": PEERS[args.peer], "load_1min": os.getloadavg()[0]}
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
