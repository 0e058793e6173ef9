"""Diagnosis of the n = 500 à la carte miss on cpu-activity (outer fold 1) under the previous ARD
start: refit the task exactly as the runner does and show which test rows carry the error (extreme
standardised inputs). Slow: one full fit (about 2 minutes on one core).
Usage: python bench/diag_alc_tails.py [DATASET FOLD]
"""

import sys

import numpy as np

from rfbench import protocol as proto
from rfbench.runner import fold_task

dataset, fold = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) > 2 else ("cpu-activity", 1)
P = proto.Protocol("cv", outer_folds=10, inner_folds=5, seed=0)
t = fold_task(dataset, "alc", fold, P, None)
est = t.cls(n_features=500, **t.common).fit(t.X_tr, t.y_tr)
pred = est.predict(t.X_te)
print("params", est.best_params_)
print("test error", proto.score(t.ds.task, t.y_te, pred, P.target_scaling))
r = pred - t.y_te
worst = np.argsort(-np.abs(r))[:10]
print("largest |residual|", np.abs(r)[worst].round(3))
print("max |x| of those rows", np.abs(t.X_te[worst]).max(axis=1).round(1))
print("RMSE without the worst 5", np.sqrt(np.mean(np.delete(r, worst[:5]) ** 2)), "with", np.sqrt(np.mean(r ** 2)))
