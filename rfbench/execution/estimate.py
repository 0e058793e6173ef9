"""How long tasks not run yet will take, from the times of finished ones: the estimator of
``rfbench status`` (core-hours left), ``rfbench run --dry-run`` and ``rfbench reproduce --dry-run``.

Per (dataset, method, n): the median time of the finished tasks of the same cell; else the same
dataset and method at another budget, scaled by the method's time ratio between the budgets; else a
power law in rows and inputs (the registry shape) fitted to the (method, n)'s finished datasets, or
the exponents the method declares (methods.yaml ``cost_scaling``); else that law of the method at its
nearest other budget, scaled by the ratio between the budgets; else NaN (a method with no finished
task, or a dataset of unknown shape).

A method whose one fit serves every budget whatever n (methods.yaml ``cost_scaling: {budget_free:
true}``: gp, gp-sod, xrfm, hgb) is estimated by what its fit costs: a finished task records only its
budget's share n / Σn of a fit shared by the budgets of its work item, so the tasks of one fold that
shared a fit count as their sum (:func:`whole_fit_costs`); the work still to run is then that cost
per fold, shared among the budgets that run together in proportion to n (:meth:`Estimate.of_tasks`).

The times are the NumPy path's: every caller leaves out the tasks a torch device computed
(``rfbench.store.device_tasks``, by their records' ``device``) through :func:`cpu_path_only`. A task's
time is the cores it kept busy (:func:`task_cost`): its CPU seconds where its record has them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rfbench.registry import Registry

#: the finished sets a (method, n) size law needs before it is preferred to another budget's law fitted
#: on more sets (the power law in rows and inputs needs four, see size_exponents)
SIZE_LAW_SETS = 4
#: the datasets nearest in rows whose ratio between two budgets scales a cell from another budget: the
#: ratio changes with size where a method changes regime (KRR and SALSA: exact below 4 000 rows, where n
#: costs nothing, Nyström of rank n above). Leaving each finished (dataset, budget pair) of the committed
#: stores out and predicting it from its other budget, the median |log10 error| was 0.086 with the median
#: over every set, 0.045 with the 3 nearest (within 2×: 85 % → 89 %; bench/perf/estimate_accuracy.py)
RATIO_SETS = 3


def cpu_path_only(done: pd.DataFrame, gpu_keys: set) -> pd.DataFrame:
    """``done`` less the tasks a torch device computed (``gpu_keys``: rfbench.store.device_tasks, keyed by
    dataset, method, n_features, fold and protocol): the estimate projects the NumPy path's time."""
    if not gpu_keys or done.empty:
        return done
    keys = zip(done["dataset"].astype(str), done["method"].astype(str), done["n_features"].astype(int),
               done["fold"].astype(int), done["protocol"].astype(str), strict=True)
    return done[[k not in gpu_keys for k in keys]]


def nearest_in_rows(names, rows: dict, target_rows: int, k: int = RATIO_SETS) -> list:
    """The (at most) ``k`` of ``names`` nearest ``target_rows`` in log rows (``rows``: name → rows), ties by
    name: the sets whose ratio between two budgets scales a cell (bench/perf/estimate_accuracy.py scores
    the same rule)."""
    return sorted(names, key=lambda d: (abs(np.log(max(rows[d], 1) / target_rows)), d))[:k]


def task_cost(done: pd.DataFrame) -> pd.Series:
    """Each finished task's seconds as the estimator counts them: its CPU seconds (``cpu_s``: every thread
    of the worker over fit + predict, so core-seconds) where the record has them, else its wall time
    (``total_s``; records written before ``cpu_s`` existed). Why not the wall time: it counts whatever
    else the machine did meanwhile. The uci-splits records, computed on 2 cores beside test runs, have
    a median CPU / wall of 0.48 over their tasks above 20 s, and a stopped and resumed worker's wall
    counts the stop (uci-elevators rff-cauchy n = 500 split 7: 2624 s of wall, 10.8 s of CPU)."""
    wall = pd.to_numeric(done["total_s"], errors="coerce").astype(float)
    if "cpu_s" not in done:
        return wall
    cpu = pd.to_numeric(done["cpu_s"], errors="coerce").astype(float)
    return cpu.where(cpu > 0, wall)


def task_seconds(done: pd.DataFrame, *, registry: Registry) -> Estimate:
    """An :class:`Estimate`: [(dataset, method, n), ...] ↦ (estimated seconds of one task each, whether each
    came from finished tasks of the same cell; a budget-free method's: its whole fit, :func:`whole_fit_costs`): the median time (:func:`task_cost`) of the cell's
    finished tasks; else
    the same dataset and method at another n, scaled by the method's median time ratio between the
    two budgets on the RATIO_SETS datasets nearest in rows that have both (n / n' if none); else a power law in rows and inputs
    fitted to the (method, n)'s finished datasets (:func:`size_model`), unless it rests on fewer than
    SIZE_LAW_SETS datasets and another budget's law on more; else (or then) the law of the method's
    budget with the most finished datasets (the nearest among equals), scaled by the same ratio (a budget no dataset has
    reached yet, e.g. the n = 500 half of a suite whose n = 100 half is running); else NaN. Shapes
    and declared cost scalings: those of ``registry``; a method whose budget is capped at the rows
    (``budget_capped_at_rows``) leaves the sets with fewer rows than n out of n's law and ratios."""
    done = done.assign(cost_s=task_cost(done))
    free = frozenset(m for m in done["method"].unique() if registry.method(m).cost_scaling.get("budget_free"))
    if free:
        done = done.assign(cost_s=whole_fit_costs(done, free))
    per_ds = done.groupby(["dataset", "method", "n_features"])["cost_s"].median()
    shape = {name: registry.dataset(name).shape for name in done["dataset"].unique()}
    # a dataset of unknown shape (a user's entry that gives none) cannot place a task on the size law
    sized = [name for name, (rows, inputs) in shape.items() if rows > 0 and inputs > 0]
    capped = {m for m in done["method"].unique() if registry.method(m).cost_scaling.get("budget_capped_at_rows")}

    def at_budget(method, names, n) -> list:
        """``names`` less, for a method whose budget is capped at the rows, the sets with fewer rows than
        n: their times are a smaller budget's (svgp's M = rows there)."""
        return [d for d in names if method not in capped or shape.get(d, (0, 0))[0] >= n]

    models, fitted_on = {}, {}
    for cell in done.groupby(["method", "n_features"]).size().index:
        times = per_ds.xs(cell, level=("method", "n_features"))
        times = times[times.index.isin(at_budget(cell[0], sized, cell[1]))]
        if len(times):
            models[cell] = size_model(times, shape, registry.method(cell[0]).cost_scaling)
            fitted_on[cell] = len(times)
    by_method = {meth: g.droplevel("method").unstack("n_features")
                 for meth, g in per_ds.groupby(level="method")}   # dataset × n, per method

    def budget_ratio(method, n, other, dataset) -> float:
        """The method's time at n over its time at ``other``: the median over the (at most RATIO_SETS)
        datasets with both that are nearest ``dataset`` in log rows, else n / other."""
        times = by_method[method]
        both = times[[n, other]].dropna() if n in times.columns else times.iloc[:0]
        both = both.loc[at_budget(method, both.index, max(n, other))]
        if not len(both):
            return n / other
        rows = registry.dataset(dataset).shape[0]
        if rows > 0:        # a dataset of unknown shape: every set with both
            both = both.loc[nearest_in_rows(both.index, {d: shape[d][0] for d in both.index}, rows)]
        return float(np.median(both[n] / both[other]))

    def nearest(budgets, n):
        return min(budgets, key=lambda b: abs(np.log(b / n)))

    def from_other_budget(dataset, method, n):
        """The cell's time from the same dataset and method at the nearest other budget, or None."""
        times = by_method.get(method)
        if times is None or dataset not in times.index:
            return None
        known = times.loc[dataset].dropna()
        if known.empty:
            return None
        other = nearest(known.index, n)
        return float(known[other]) * budget_ratio(method, n, other, dataset)

    def from_size(dataset, method, n):
        """The cell's time from the size law of (method, n), else of the method's nearest other budget
        scaled by the ratio between the budgets; NaN without either or for a dataset of unknown shape."""
        size = registry.dataset(dataset).shape
        if min(size) <= 0:
            return np.nan
        budgets = [b for (m, b) in models if m == method and b != n]
        own = fitted_on.get((method, n), 0)
        # the cell's own law, unless it rests on fewer than SIZE_LAW_SETS sets and another budget's
        # rests on more: a law through two sets, extrapolated 10x in rows, misses by orders of magnitude
        # (gbrff1 at n = 500 through sml and parkinsons: 190 h a kegg task), while the other budget's
        # law scaled by the measured ratio between the budgets keeps the shape of many sets
        better = [b for b in budgets if fitted_on[(method, b)] > own]     # every other budget when own is 0
        if own and (own >= SIZE_LAW_SETS or not better):
            return models[(method, n)](*size)
        if not better:
            return np.nan
        most = max(fitted_on[(method, b)] for b in better)
        other = nearest([b for b in better if fitted_on[(method, b)] == most], n)
        return models[(method, other)](*size) * budget_ratio(method, n, other, dataset)

    def estimate(cells):
        known = [c in per_ds.index for c in cells]
        est = []
        for c, k in zip(cells, known, strict=True):
            if k:
                est.append(per_ds[c])
                continue
            scaled = from_other_budget(*c)
            est.append(scaled if scaled is not None else from_size(*c))
        return np.asarray(est, dtype=float), known

    return Estimate(estimate, free)


@dataclass(frozen=True)
class Estimate:
    """What :func:`task_seconds` returns. Called with cells [(dataset, method, n), ...]: (the seconds of
    one task of each, whether each came from finished tasks of the same cell); for a method in
    ``budget_free``, the seconds of its whole fit (every budget at once)."""

    cell_seconds: Callable
    budget_free: frozenset

    def __call__(self, cells):
        return self.cell_seconds(cells)

    def of_tasks(self, tasks):
        """Tasks [(dataset, method, n, group), ...], those of one group run together (one work item:
        the same fold), ↦ (seconds of each, whether each came from finished tasks of its cell): a
        budget-free method's fit cost per group, each task its share n / Σn of the group's budgets."""
        est, known = self([t[:3] for t in tasks])
        est = np.asarray(est, dtype=float)
        if self.budget_free and len(tasks):
            budgets: dict[tuple, float] = {}
            for d, m, n, g in tasks:
                if m in self.budget_free:
                    budgets[(d, m, g)] = budgets.get((d, m, g), 0.0) + float(n)
            share = [float(n) / budgets[(d, m, g)] if m in self.budget_free else 1.0 for d, m, n, g in tasks]
            est = est * np.asarray(share)
        return est, known


def whole_fit_costs(done: pd.DataFrame, free) -> pd.Series:
    """``done["cost_s"]`` with each task of a method in ``free`` (budget-free) counted as the whole fit
    it shared with the other budgets of its fold (dataset, method, fold and, where recorded, seed and
    protocol): their sum. Tasks of one fold were fitted once where their fit times are the shares of
    one time (the runner records fit_s = the fit's time × n / Σn); tasks fitted apart each hold their
    whole fit already and keep it. Without a ``fold`` column nothing can be grouped: unchanged."""
    cost = done["cost_s"].astype(float)
    if "fold" not in done:
        return cost
    rows = done[done["method"].isin(list(free))]
    keys = [c for c in ("dataset", "method", "fold", "seed", "protocol") if c in rows]
    out = cost.copy()
    for _, group in rows.groupby(keys, sort=False, dropna=False):
        if len(group) > 1 and _fitted_once(group):
            out.loc[group.index] = float(cost.loc[group.index].sum())
    return out


def _fitted_once(group: pd.DataFrame) -> bool:
    """Whether the tasks (one fold's budgets) record shares of one fit: fit_s / n the same to rounding
    (assumed where fit_s is not recorded, the runner's way when the budgets run together)."""
    if "fit_s" not in group:
        return True
    per_n = pd.to_numeric(group["fit_s"], errors="coerce").to_numpy(float) / group["n_features"].to_numpy(float)
    if not np.isfinite(per_n).all():
        return True
    return bool(np.all(np.abs(per_n - per_n[0]) <= 1e-9 * max(abs(per_n[0]), 1e-300)))


def size_model(times: pd.Series, shape: dict, declared: dict | None = None):
    """(rows, inputs) ↦ task time from the median times of finished datasets (index: dataset names).

    A power law, fitted in logs: t = a·rows^b·inputs^c with four or more datasets that vary in both
    (b, c within [0, 3]); else t = a·(rows·inputs)^b; with one size, proportional to rows·inputs.
    A method that declares its exponents (methods.yaml ``cost_scaling``: rows, inputs) is scaled with them from
    its largest finished dataset, whose time is the least diluted by fixed costs (floored by the
    fastest finished set no larger than the task, none below every finished set); rows above a
    declared ``rows_cap`` count as ``rows_cap`` (a subset-of-data GP fits N rows of any larger set).
    Why powers, not a line: costs are superlinear (SVR) or nearly blind to inputs (a fixed number of
    random features), and a line through small sets misjudges a large one by 10× either way (the
    ujindoorloc à la carte fold: a line said 2 h; measured ≈ 10 min).
    Why one law through every finished set: fitted instead to the sets nearest the task in rows (or
    only its level), it followed a regime change (SALSA and KRR go Nyström above 4 000 rows) once
    a set of the new regime was finished, but extrapolated worse to sets 4× and 10× beyond the
    finished ones, the dry run's case (``bench/perf/estimate_accuracy.py``, docs/history/runner.md).
    """
    rows = np.log([shape[name][0] for name in times.index])
    inputs = np.log([shape[name][1] for name in times.index])
    log_t = np.log(times.to_numpy(dtype=float))
    if declared and ("rows" in declared or "inputs" in declared):  # declared exponents, scaled from its largest finished dataset
        b, c = declared.get("rows", 0.0), declared.get("inputs", 0.0)
        cap = float(declared.get("rows_cap", np.inf))
        capped = np.minimum(rows, np.log(cap))
        # largest by the declared measure of size; among sets past the cap, the largest uncapped
        size = b * capped + c * inputs
        big = max(range(len(rows)), key=lambda i: (size[i], rows[i]))
        log_a = log_t[big] - size[big]

        def declared_law(r, d):
            # floored by the fastest finished set no larger than the task, the fixed costs a smaller
            # law would miss; none for a task below every finished set (gp-sod's only CPU set was sml:
            # a floor at its time had made a 21-row set cost as much as 3 724 rows)
            r = min(r, cap)
            below = log_t[size <= b * np.log(r) + c * np.log(d) + 1e-9]
            return _power_law(log_a, b, c, below.min() if len(below) else -np.inf)(r, d)

        return declared_law
    exponents = size_exponents(rows, inputs, log_t)
    if exponents is None:  # one size: proportional to rows × inputs, no floor
        return _power_law(float(np.median(log_t - rows - inputs)), 1.0, 1.0, -np.inf)
    b, c = exponents
    # the level refitted after clipping the exponents
    return _power_law(float(np.median(log_t - b * rows - c * inputs)), b, c, log_t.min())


def size_exponents(rows: np.ndarray, inputs: np.ndarray, log_t: np.ndarray) -> tuple[float, float] | None:
    """The exponents (b of rows, c of inputs, each within [0, 3]) of t = a·rows^b·inputs^c through
    finished sets (all arguments logs): least squares with four or more sets that vary in both, else
    one exponent of rows·inputs; None when every set has one size (no slope to fit)."""
    if len(log_t) >= 4 and len(np.unique(rows)) >= 2 and len(np.unique(inputs)) >= 2:
        A = np.column_stack([np.ones_like(rows), rows, inputs])
        b, c = np.clip(np.linalg.lstsq(A, log_t, rcond=None)[0][1:], 0.0, 3.0)
        return float(b), float(c)
    if len(np.unique(rows + inputs)) >= 2:
        b = float(np.clip(np.polyfit(rows + inputs, log_t, 1)[0], 0.0, 3.0))
        return b, b
    return None


def _power_law(log_a: float, b: float, c: float, log_floor: float):
    """(rows, inputs) ↦ max(a·rows^b·inputs^c, floor), from logs."""
    return lambda r, d: float(np.exp(max(log_a + b * np.log(r) + c * np.log(d), log_floor)))
