"""The UCI splits' duplicated rows: how many test rows are copies of a training row, and what they do to the error.

Per set of the mirror (``uci-splits/<set>/data.csv.gz`` and ``test_mask.csv.gz``) and per published
split: the share of test rows whose inputs equal those of some training row, the share that equal a
training row in inputs and target (a copy), and the share of training rows with an exact copy among
the training rows. Equality is exact, on the values as stored (the runner's standardisation maps
equal rows to equal rows, so it changes nothing). A test row that is a training row rewards a method
that interpolates its training data, and the inner CV's validation folds hold such copies too.

Then, on split 0 of the sets with copies above 10 % (``--refit-sets``), a few methods are refitted on
the runner's own task (:func:`rfbench.execution.tasks.fold_task`: the record's seed and scaling) and
their test RMSE (the target as stored) is split between the test rows that are training rows and the
others: how much of a cell is reproduction and how much prediction.

    RFBENCH_DATA_DIR=../shared/datasets python bench/analysis/uci_duplicates.py \
        [--refit-sets solar keggundirected keggdirected wine] [--methods rff-gauss krr falkon hgb eerf] \
        [--output results/uci-duplicates.json]

The shares from the files alone (half a minute); the refits about three minutes on one thread.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd


def row_ids(values: np.ndarray) -> np.ndarray:
    """One integer per row, equal for exactly equal rows."""
    return np.unique(values, axis=0, return_inverse=True)[1].ravel()


def split_shares(X: np.ndarray, y: np.ndarray, masks: np.ndarray) -> pd.DataFrame:
    """Per split (the masks' columns, 1 = test row): the three shares of the module's docstring."""
    inputs, rows = row_ids(X), row_ids(np.column_stack([X, y]))
    out = []
    for j in range(masks.shape[1]):
        test = masks[:, j] == 1
        train = ~test
        train_ids, train_counts = np.unique(rows[train], return_counts=True)
        out.append({"split": j,
                    "test_inputs_in_train": float(np.isin(inputs[test], inputs[train]).mean()),
                    "test_rows_in_train": float(np.isin(rows[test], rows[train]).mean()),
                    "train_rows_duplicated": float(train_counts[train_counts > 1].sum() / train.sum())})
    return pd.DataFrame(out)


def refit_errors(dataset: str, method: str, split: int, reg) -> dict:
    """Test RMSE of one refit task: all test rows, the copies of a training row, the others."""
    from rfbench import protocol as proto
    from rfbench.execution.tasks import fold_task

    protocol = proto.Protocol("published")
    task = fold_task(f"uci-{dataset}", method, split, protocol, None, registry=reg)
    est = task.cls(n_features=100, **task.common).fit(task.X_tr, task.y_tr)
    pred = est.predict(task.X_te)
    # copies found on the scaled rows: the scaling is one affine map per column, so equal rows stay equal
    rows = row_ids(np.vstack([np.column_stack([task.X_tr, task.y_tr]), np.column_stack([task.X_te, task.y_te])]))
    copy = np.isin(rows[len(task.y_tr):], rows[:len(task.y_tr)])

    def rmse(part):
        return float(proto.score("regression", task.y_te[part], pred[part], protocol.target_scaling, task.y_unit))

    return {"set": dataset, "split": split, "method": method, "test_rows": int(copy.size),
            "copies": int(copy.sum()), "rmse": rmse(np.ones_like(copy)), "rmse_copies": rmse(copy),
            "rmse_others": rmse(~copy)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("RFBENCH_DATA_DIR"),
                    help="the dataset mirror (default: RFBENCH_DATA_DIR)")
    ap.add_argument("--refit-sets", nargs="*", default=["solar", "keggundirected", "keggdirected", "wine"])
    ap.add_argument("--methods", nargs="+", default=["rff-gauss", "krr", "falkon", "hgb", "eerf"])
    ap.add_argument("--output", default="results/uci-duplicates.json")
    args = ap.parse_args(argv)
    if not args.data_dir or not (Path(args.data_dir) / "uci-splits").is_dir():
        raise SystemExit("uci_duplicates: no uci-splits/ in the dataset mirror; set RFBENCH_DATA_DIR or --data-dir")
    base = Path(args.data_dir) / "uci-splits"
    sets = []
    for folder in sorted(p for p in base.iterdir() if (p / "test_mask.csv.gz").is_file()):
        data = pd.read_csv(folder / "data.csv.gz", header=None).to_numpy(dtype=float)
        masks = pd.read_csv(folder / "test_mask.csv.gz", header=None).to_numpy()
        shares = split_shares(data[:, :-1], data[:, -1], masks)
        sets.append({"set": folder.name, "rows": int(data.shape[0]), "inputs": int(data.shape[1] - 1),
                     **{f"{k}_mean": round(float(shares[k].mean()), 4) for k in shares.columns if k != "split"},
                     "test_rows_in_train_min": round(float(shares["test_rows_in_train"].min()), 4),
                     "test_rows_in_train_max": round(float(shares["test_rows_in_train"].max()), 4)})
    table = pd.DataFrame(sets).sort_values("test_rows_in_train_mean", ascending=False)
    print(table.to_string(index=False))
    refits = []
    if args.refit_sets:
        from threadpoolctl import threadpool_limits

        from rfbench import registry

        reg = registry.load()
        with threadpool_limits(1):
            for dataset in args.refit_sets:
                for method in args.methods:
                    refits.append(refit_errors(dataset, method, 0, reg))
                    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in refits[-1].items()}, flush=True)
    Path(args.output).write_text(json.dumps({"sets": table.to_dict("records"), "refits": refits}, indent=1) + "\n")
    with_copies = table[table["test_rows_in_train_mean"] > 0]
    print(f"{len(with_copies)} of {len(table)} sets have test rows that are training rows; "
          f"above 10 %: {', '.join(with_copies[with_copies['test_rows_in_train_mean'] > 0.1]['set'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
