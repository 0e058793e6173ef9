"""Result cells, defined once for report, check, plot and status.

A cell is one (dataset, n_features, method) of a results table; its tasks are the (seed, fold)
pairs of the protocol. This module says

* what the records' ``metric`` codes mean (:data:`METRICS`: label, unit, which way is better),
* which seed a record belongs to (:func:`seeds_of`) and how a cell pools its seeds (:func:`pooled`),
* when a cell is complete (:func:`completeness`: every seed its dataset was run with has every
  fold of the protocol),
* on which folds cells that are not all complete are compared (:func:`common_index`: the (seed,
  fold) tasks every one of them has) and how such a screen is labelled (:func:`screen_label`,
  e.g. "screen: folds 0-2 of 10"),
* how a results table is narrowed to some methods and datasets (:func:`select`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from rfbench.protocol import outer_count_of_key
from rfbench.registry import subset  # the one "a subset of what is there" rule (data.request's too)

CELL = ["dataset", "n_features", "method"]


@dataclass(frozen=True)
class Metric:
    name: str                 # the records' code (protocol.metric_name)
    label: str                # what a figure's axis or a table's column says
    unit: str                 # "%" or "" (a plain number)
    higher_is_better: bool
    description: str          # the report caption's words: what the number is, on which outputs

    @property
    def axis_label(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


METRICS = {m.name: m for m in (
    Metric("rmse100", "RMSE × 100", "", False, "RMSE × 100 (outputs scaled to range one)"),
    Metric("rmse", "RMSE", "", False, "test RMSE on the target as stored (published splits)"),
    Metric("rmse-std", "RMSE / std(y)", "", False,
           "test RMSE on the target as stored divided by the standard deviation of the dataset's target"),
    Metric("mse", "test MSE", "", False, "test MSE of the standardised output"),
    Metric("mse100", "test MSE × 100", "", False, "100 × test MSE of outputs scaled to [−1, 1]"),
    Metric("accuracy", "accuracy", "%", True, "accuracy (%)"),
    Metric("error", "misclassification rate", "%", False, "test misclassification rate (%)"),
)}


def metric(name) -> Metric:
    """The metric of a code; an unknown code is shown as itself, lower is better (none: 'error')."""
    name = "" if name is None or str(name) in ("", "nan") else str(name)
    return METRICS.get(name) or Metric(name, name or "error", "", False, name or "error")


def higher_is_better(names: Iterable) -> bool:
    """Whether the numbers of these metric codes all grow with quality (none given: no)."""
    found = {str(n) for n in names}
    return bool(found) and all(metric(n).higher_is_better for n in found)


def axis_label(names: Iterable) -> str:
    """The label of one metric, or of a mix ('error / accuracy')."""
    found = sorted({str(n) for n in names})
    if len(found) == 1:
        return metric(found[0]).axis_label
    return "error / accuracy"


def seeds_of(df: pd.DataFrame) -> pd.Series:
    """The seed of every record (records without one: seed 0, the default of every run)."""
    if "seed" not in df:
        return pd.Series(0, index=df.index)
    return pd.to_numeric(df["seed"], errors="coerce").fillna(0).astype(int)


def pooled(errors: pd.Series, seeds: pd.Series) -> dict:
    """A cell's errors pooled over seeds: mean over every (seed, fold) error; fold_std the std over
    one seed's folds, mean over the seeds (with one seed: the std over the folds, as the papers
    print it); seed_std the std of the per-seed means (None: one seed); min_folds the folds of its
    least complete seed."""
    per_seed = errors.astype(float).groupby(seeds.to_numpy())
    fold_stds, means = per_seed.std(ddof=1).dropna(), per_seed.mean()
    return {"mean": float(errors.astype(float).mean()), "fold_std": float(fold_stds.mean()) if len(fold_stds) else 0.0,
            "seed_std": float(means.std(ddof=1)) if len(means) > 1 else None, "seeds": len(means),
            "min_folds": int(per_seed.size().min())}


def protocol_folds(keys: Iterable) -> int | None:
    """Outer folds (or splits, repeats) of a complete cell per seed under these protocol keys: the
    largest; None when a key cannot be read."""
    counts = set()
    for key in keys:
        try:
            counts.add(outer_count_of_key(key))
        except TypeError:            # an unhashable key
            counts.add(None)
    return None if not counts or None in counts else max(counts)


def completeness(done: pd.DataFrame, folds_per_seed: int | None = None) -> pd.DataFrame:
    """Per cell (index: dataset, n_features, method) of the finished records ``done``: ``folds``
    finished (seed, fold) tasks, ``expected`` the tasks of a complete cell (folds per seed × the
    seeds its dataset was run with; NaN when unknown) and ``complete``: every one of those seeds
    has every fold. ``folds_per_seed`` is the protocol's (a spec's), else read from the records'
    protocol keys; 0 or unknown: every cell counts as complete."""
    seeds = seeds_of(done)
    keys = [done[c] for c in CELL]
    per_seed = done.groupby([*keys, seeds]).size()
    seeds_of_dataset = seeds.groupby(done["dataset"]).nunique()
    rows = {}
    by_cell = done.groupby(keys)
    protocols = by_cell["protocol"].unique() if folds_per_seed is None and "protocol" in done else None
    for cell, counts in per_seed.groupby(level=[0, 1, 2]):
        need = folds_per_seed if folds_per_seed is not None else (
            protocol_folds(protocols[cell]) if protocols is not None else None)
        n_seeds = int(seeds_of_dataset[cell[0]])
        if not need:
            rows[cell] = (int(counts.sum()), float("nan"), True)
            continue
        complete = len(counts) >= n_seeds and bool((counts >= need).all())
        rows[cell] = (int(counts.sum()), float(need * n_seeds), complete)
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["folds", "expected", "complete"])
    out.index = pd.MultiIndex.from_tuples(out.index, names=CELL)
    return out


def complete_cells(done: pd.DataFrame, folds_per_seed: int | None = None) -> pd.DataFrame:
    """The finished records of complete cells only (see :func:`completeness`): the mean of a run
    still in progress is not the cell's result, so summaries across datasets leave it out."""
    if done.empty:
        return done
    ok = completeness(done, folds_per_seed)["complete"]
    keep = pd.MultiIndex.from_frame(done[CELL]).isin(ok[ok].index)
    return done[keep]


def common_index(errors: Iterable[pd.Series]) -> pd.Index:
    """The (seed, fold) tasks (or folds) every one of these cells' error series has."""
    index = None
    for e in errors:
        index = e.index if index is None else index.intersection(e.index)
    return index if index is not None else pd.Index([])


def fold_ranges(folds: Iterable[int]) -> str:
    """[0, 1, 2, 5] → '0-2,5'."""
    folds = sorted({int(f) for f in folds})
    parts, start = [], None
    for i, f in enumerate(folds):
        if start is None:
            start = f
        if i + 1 == len(folds) or folds[i + 1] != f + 1:
            parts.append(f"{start}" if start == f else f"{start}-{f}")
            start = None
    return ",".join(parts)


def _folds(index: pd.Index) -> frozenset:
    return frozenset(index.get_level_values("fold") if isinstance(index, pd.MultiIndex) else index)


def screen_label(indexes: Iterable[pd.Index], total: int | None) -> str:
    """'screen: folds 0-2 of 10' for statistics computed on the folds the compared cells have in
    common (one index per dataset); when the datasets differ in them, how many each has."""
    sets = [_folds(i) for i in indexes]
    of = f" of {total}" if total else ""
    if len({*sets}) == 1:
        return f"screen: fold{'s' if len(sets[0]) > 1 else ''} {fold_ranges(sets[0])}{of}"
    sizes = sorted(len(s) for s in sets)
    return f"screen: {sizes[0]}-{sizes[-1]}{of} folds in common per dataset"


def select(df: pd.DataFrame, methods: Iterable[str] | None = None, datasets: Iterable[str] | None = None,
           where: str = "these results") -> pd.DataFrame:
    """The records of these methods and datasets (None: all). A name the records do not have is a
    UsageError naming it and the ones there are."""
    for option, column, names in (("--methods", "method", methods), ("--datasets", "dataset", datasets)):
        if names is not None:
            keep = subset(names, sorted(set(df[column].astype(str))), option, where)
            df = df[df[column].astype(str).isin(keep)]
    return df
