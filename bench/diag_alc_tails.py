"""Diagnosis of the n = 500 à la carte miss on cpu-activity (outer fold 1): refit the task exactly as
the runner does and show which test rows carry the error (extreme standardised inputs).
Slow: one full fit (about 3 minutes on one core). Usage: python bench/diag_alc_tails.py [DATASET FOLD]
"""

import sys

import numpy as np

from rfbench import protocol as proto
from rfbench import runner
from rfbench.registry import get_method
from rfbench.runner import method_seed

dataset, fold = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) > 2 else ("cpu-activity", 1)
P = proto.Protocol("cv", outer_folds=10, inner_folds=5, seed=0)
ds, X, y, _ = runner._prepared(dataset, None, None, 0)
tr, te = proto.outer_splits(P, y, ds.task, ds.holdout)[fold]
sc = proto.Scaler.fit(X[tr], y[tr], ds.task, P.target_scaling)
X_tr, X_te, y_tr, y_te = sc.x(X[tr]), sc.x(X[te]), sc.y(y[tr]), sc.y(y[te])
method = get_method("alc")
est = method.estimator_class(ds.task)(n_features=500, cv=proto.inner_splits(P, y_tr, ds.task, fold),
                                      random_state=method_seed(0, fold), n_jobs=1, **method.params)
est.fit(X_tr, y_tr)
print("params", est.best_params_)
print("test error", proto.score(ds.task, y_te, est.predict(X_te), P.target_scaling))
r = est.predict(X_te) - y_te
worst = np.argsort(-np.abs(r))[:10]
print("largest |residual|", np.abs(r)[worst].round(3))
print("max |x| of those rows", np.abs(X_te[worst]).max(axis=1).round(1))
print("RMSE without the worst 5", np.sqrt(np.mean(np.delete(r, worst[:5]) ** 2)), "with", np.sqrt(np.mean(r ** 2)))
