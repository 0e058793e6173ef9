"""The report's statistics and its build step: error/walltime tables in the GFC paper's Table 1
layout, with significance tests.

Rows: dataset, m, d; then for every n_features and method the error mean (± std over outer folds)
and the walltime per outer fold (``0.31 s``, ``12.4 s`` below one minute, ``hh:mm:ss`` from one
minute on: :func:`rfbench.reporting.render.common.fmt_walltime`). Bold marks a result significantly better than every other method
at the same n (Welch's t-test over the outer folds, p = 0.05, or with ``test="paired"`` the paired
t-test on the per-fold differences); a line under the table says which. Below the table: the
Wilcoxon signed-rank test across datasets for every method pair and n.

Partial cells (a run in progress, a ``--folds 0-2`` screen; completeness as :mod:`rfbench.reporting.cells`
defines it) are marked ``[3/10]``: a t-test against one runs on the (seed, fold) tasks both cells
have; a Wilcoxon row runs on the complete cells when two datasets have them, else on the tasks both
methods have in common per dataset, labelled in its column ``protocol`` ("screen: folds 0-2 of 10").
Complete cells carry no mark.

Seeds (``rfbench run --seeds 0,1,2``; the results are pooled by ``store.load_results``): a cell's
mean is over all its (seed, fold) errors, and it shows the spread across folds (the std over one
seed's folds, mean over seeds) apart from the spread across seeds (the std of the per-seed means):
``3.92 (±0.36 folds, ±0.05 seeds)``; with one seed, ``3.92 (±0.36)``. The t-tests run
over every (seed, fold) error, the paired one paired by (seed, fold) since within a seed the splits
are the same for every method (:func:`bold_rule` says why not over per-seed means).

The build step (:func:`table_model`) turns the results into a
:class:`rfbench.reporting.table_model.TableModel`: the cells with their numbers and marks (bold,
partial), the captions, the Wilcoxon and timing rows. One module per format of
:mod:`rfbench.reporting.render` lays it out (text wrapped to a width, Markdown, LaTeX fitted to a
text width, CSV, HTML); :func:`render` is the two in one call. Methods are shown by their registered
names, or by display names given with ``names`` (``--names gfc=GFC,alc=à la carte`` or ``--names
names.yaml``; :func:`parse_names`), in every format but CSV, which keeps the registered names.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rfbench.errors import UsageError
from rfbench.protocol import Splits, read_key
from rfbench.registry import Registry
from rfbench.reporting import cells as cells_mod
from rfbench.reporting import render as renderers
from rfbench.reporting import stats, timing
from rfbench.reporting.render import TEXT_WIDTH_PT, RenderOptions
from rfbench.reporting.table_model import FULL_PROTOCOL, ResultCell, Row, TableModel
from rfbench.store.record import fitted_by_sign


@dataclass
class Cell:
    mean: float                     # over every (seed, fold) error of the cell
    std: float                      # spread across folds: the std over one seed's folds, mean over seeds
    walltime: float
    folds: int                      # (seed, fold) errors finished
    bold: bool = False
    expected: int | None = None     # folds of a complete cell under its protocol × seeds (None: unknown)
    seeds: int = 1
    seed_std: float | None = None   # spread across seeds: the std of the per-seed means (None: one seed)
    unit: str = "folds"             # what std is across ("splits" under the splits protocol)
    complete: bool = True           # every seed has every fold (cells.completeness)

    @property
    def partial(self) -> bool:
        """Fewer folds finished than the protocol has (a run in progress)."""
        return not self.complete


def lower(x: pd.Series, y: pd.Series, alpha: float = 0.05, test: str = "welch") -> bool:
    """x significantly lower than y (fold errors indexed by fold number, or by (seed, fold) when
    the results hold several seeds). The paired test pairs the same fold of the same seed of both
    cells (within a seed the folds are identical for every method) and uses only the (seed, fold)
    pairs both cells have; Welch's test takes every (seed, fold) error of each cell as one value."""
    if test == "paired":
        x, y = x.align(y, join="inner")
    return stats.significantly_lower(x, y, alpha, test)


def summarise(df: pd.DataFrame, alpha: float = 0.05, test: str = "welch"):
    """Per (dataset, n, method) cells, the fold errors, and the bold marks.

    Seeds (``rfbench run --seeds``) are pooled: a cell's mean is over all its (seed, fold) errors;
    its spread across folds (``std``) is the mean over seeds of the std over that seed's folds, and
    its spread across seeds (``seed_std``) the std of the per-seed means; with one seed, ``std`` is
    the std over the folds as before. The errors are indexed by fold, or by (seed, fold) when the
    results hold several seeds, and the t-tests run over every (seed, fold) value (see
    :func:`lower` and :func:`bold_rule`). A complete cell has every fold of every seed its dataset
    was run with."""
    if test not in stats.TESTS:
        raise UsageError(f"unknown test '{test}'; use one of {', '.join(stats.TESTS)}")
    done = df[df["status"] == "done"].copy()
    if done.empty:
        raise UsageError("no finished tasks in these results (every record is an error or timeout)")
    done["error"] = done["error"].astype(float)
    done["seed"] = cells_mod.seeds_of(done)
    several = done["seed"].nunique() > 1
    cells: dict[tuple, Cell] = {}
    errors: dict[tuple, pd.Series] = {}
    # per cell, the rows of `done` in their order (what a loop over the groups would give each
    # one): every statistic below is computed on the same values in the same order as per group
    groups = done.groupby(["dataset", "n_features", "method"], sort=True)
    rows = groups.indices
    by_seed = done.groupby(["dataset", "n_features", "method", "seed"], sort=True)["error"]
    seed_std, seed_mean = by_seed.std(ddof=1), by_seed.mean()
    seed_cell: dict[tuple, list[int]] = {key: [] for key in rows}    # a cell's positions in seed_std, seed_mean
    for i, key in enumerate(seed_std.index):
        seed_cell[key[:3]].append(i)
    std_of_seed, mean_of_seed = seed_std.to_numpy(), seed_mean.to_numpy()
    error, fold, seed = done["error"].array, done["fold"].array, done["seed"].array
    total = done["total_s"].astype(float)
    complete = cells_mod.completeness(done) if "protocol" in done else None
    has_protocol = "protocol" in done
    splits = _random_splits(done["protocol"]) if has_protocol else None
    for ds, n, meth in groups.size().index:
        idx = rows[(ds, n, meth)]
        index = (pd.MultiIndex.from_arrays([seed[idx], fold[idx]], names=["seed", "fold"]) if several
                 else pd.Index(fold[idx], name="fold"))
        e = pd.Series(error[idx], index=index, name="error", copy=False).sort_index()
        errors[(ds, n, meth)] = e
        at = seed_cell[(ds, n, meth)]
        fold_stds = pd.Series(std_of_seed[at]).dropna()          # seeds with at least two folds
        means = pd.Series(mean_of_seed[at])
        # folds of a complete cell: known when every fold's protocol key can be read
        expected = complete.loc[(ds, n, meth)] if complete is not None else None
        unit = "splits" if has_protocol and splits.iloc[idx].all() else "folds"
        cells[(ds, n, meth)] = Cell(float(e.mean()), float(fold_stds.mean()) if len(fold_stds) else 0.0,
                                    float(total.iloc[idx].mean()), int(e.size),
                                    expected=None if expected is None or math.isnan(expected["expected"])
                                    else int(expected["expected"]),
                                    seeds=len(means), seed_std=float(means.std(ddof=1)) if len(means) > 1 else None,
                                    unit=unit, complete=True if expected is None else bool(expected["complete"]))
    higher_is_better = cells_mod.higher_is_better(done["metric"].dropna())
    mark_bold(cells, errors, higher_is_better, alpha, test)
    return cells, errors, higher_is_better


def mark_bold(cells: dict, errors: dict, higher_is_better: bool, alpha: float = 0.05, test: str = "welch") -> None:
    """Bold the cells significantly better than every other method at their dataset and n. A test
    against a partial cell runs on the (seed, fold) tasks both cells have in common (the complete
    cell's other folds are other splits, not more of the same comparison)."""
    at: dict[tuple, list] = {}
    for key in cells:
        at.setdefault(key[:2], []).append(key)
    loss = {k: -e if higher_is_better else e for k, e in errors.items()}
    for keys in at.values():
        for k in keys:
            if len(keys) > 1:
                cells[k].bold = all(lower_on_common(cells, loss, k, o, alpha, test) for o in keys if o != k)


def lower_on_common(cells: dict, loss: dict, k, o, alpha: float, test: str) -> bool:
    """Cell k's loss significantly lower than cell o's, on the folds both have when either is partial."""
    x, y = loss[k], loss[o]
    if cells[k].partial or cells[o].partial:
        on = cells_mod.common_index([x, y])
        x, y = x.loc[on], y.loc[on]
    return lower(x, y, alpha, test)


def parse_comparisons(text: str | None) -> list[tuple[str, int, str, int]]:
    """'gfc@500:alc@100,gfc@100:alc@100' → [(a, n_a, b, n_b), ...] (cross-n comparisons)."""
    out = []
    for item in (text or "").split(","):
        if not item.strip():
            continue
        try:
            left, right = item.split(":")
            (a, na), (b, nb) = (side.strip().split("@") for side in (left, right))
            out.append((a, int(na), b, int(nb)))
        except ValueError:
            raise UsageError(f"--compare '{item}' must look like gfc@500:alc@100") from None
    return out


def check_comparisons(df: pd.DataFrame, comparisons) -> None:
    """One line when a --compare names a (method, n) the results have no finished task of (the
    comparison would otherwise be left out of the report without a word)."""
    done = df[df["status"] == "done"] if "status" in df else df
    present = set(zip(done["method"].astype(str), pd.to_numeric(done["n_features"], errors="coerce"), strict=True))
    for a, na, b, nb in comparisons:
        for meth, n in ((a, na), (b, nb)):
            if (meth, n) not in present:
                have = ", ".join(f"{m}@{int(k)}" for m, k in sorted(present, key=str))
                raise UsageError(f"--compare {a}@{na}:{b}@{nb}: the results have no finished task of {meth} at "
                                 f"n = {n}; they have {have}")


def ttest_record(errors, common, a, na, b, nb, higher_is_better: bool, test: str = "welch") -> str:
    """'wins/ties/losses' of a against b over datasets by the t-test on the outer-fold errors
    (Welch's: the EERF paper's per-dataset comparison); a tie is a difference the test does not
    confirm."""
    def sign(x):
        return -x if higher_is_better else x
    ea, eb = ([sign(errors[(d, n, m)]) for d in common] for m, n in ((a, na), (b, nb)))
    win = sum(lower(x, y, test=test) for x, y in zip(ea, eb, strict=True))
    loss = sum(lower(y, x, test=test) for x, y in zip(ea, eb, strict=True))
    return f"{win}/{len(common) - win - loss}/{loss}"


def wilcoxon_row(cells, a, na, b, nb, higher_is_better: bool, errors=None, test: str = "welch",
                 names: dict[str, str] | None = None) -> dict | None:
    """Wilcoxon signed-rank test of method a at n = na against b at n = nb across datasets, with
    the per-dataset t-test win/tie/loss record when the fold errors are given.

    It runs on the datasets where both cells are complete (the mean of a run in progress is not the
    cell's result) when there are at least two. Else, given the fold errors, it is a screen: every
    dataset with both cells, each cell's mean taken over the (seed, fold) tasks the two have in
    common, and the row's ``protocol`` says so ("screen: folds 0-2 of 10")."""
    def present(meth, n, partial_ok):
        return {k[0] for k, c in cells.items() if k[1:] == (n, meth) and (partial_ok or not c.partial)}

    common = sorted(present(a, na, False) & present(b, nb, False))
    screen = None
    if len(common) < 2 and errors is not None:
        both = sorted(present(a, na, True) & present(b, nb, True))
        on = {d: cells_mod.common_index([errors[(d, na, a)], errors[(d, nb, b)]]) for d in both}
        common = [d for d in both if len(on[d])]
        if len(common) >= 2:
            errors = {(d, n, m): errors[(d, n, m)].loc[on[d]] for d in common for m, n in ((a, na), (b, nb))}
            total = cells[(common[0], na, a)].expected
            seeds = cells[(common[0], na, a)].seeds
            screen = cells_mod.screen_label([on[d] for d in common], total // seeds if total else None)
    if len(common) < 2:
        return None
    if screen is None:
        ea = np.array([cells[(d, na, a)].mean for d in common])
        eb = np.array([cells[(d, nb, b)].mean for d in common])
    else:
        ea, eb = (np.array([float(errors[(d, n, m)].mean()) for d in common]) for m, n in ((a, na), (b, nb)))
    T, p, N = stats.wilcoxon(ea, eb)
    real = ~stats.ties(ea, eb)                    # a tie (1e-14 apart) is no win
    a_better = (ea > eb if higher_is_better else ea < eb) & real
    b_better = (eb > ea if higher_is_better else eb < ea) & real
    pair = _pair_name(a, b, na, nb, names or {})
    row = {"n": na if na == nb else f"{na}/{nb}", "pair": pair, "datasets": len(common), "N (non-ties)": N,
           "T": T, "T_crit_95": stats.wilcoxon_critical_value(N),
           "T_crit_95_normal": stats.wilcoxon_critical_value(N, method="normal"), "p": p,
           "wins_a": int(a_better.sum()), "wins_b": int(b_better.sum())}
    if errors is not None:
        row[f"{test} W/T/L (a)"] = ttest_record(errors, common, a, na, b, nb, higher_is_better, test)
    if screen is not None:
        row["protocol"] = screen
    return row



WILCOXON_ALPHA = 0.05        # the level of the T_crit_95 columns


def wilcoxon_minimum(alpha: float = WILCOXON_ALPHA) -> int:
    """The fewest datasets (non-tied pairs) on which the two-sided Wilcoxon signed-rank test can
    reject at ``alpha``: the smallest N with an exact critical value (:func:`stats.wilcoxon_critical_value`;
    6 at 0.05)."""
    return next(n for n in range(1, 1000) if stats.wilcoxon_critical_value(n, alpha) is not None)


def too_few_datasets(tests: list[dict], alpha: float = WILCOXON_ALPHA) -> str | None:
    """The one line shown instead of the Wilcoxon table when no pair has the datasets the test needs
    to reject at ``alpha`` (every row would be dashes); None when some pair has them (or no row)."""
    if not tests:
        return None
    most, need = max(int(t["datasets"]) for t in tests), wilcoxon_minimum(alpha)
    if most >= need:
        return None
    return (f"Wilcoxon signed-rank test across datasets: too few datasets for a test ({most} at most per pair of "
            f"methods; two-sided at p = {alpha:g} it can reject only from N = {need} datasets without ties).")


def wilcoxon_table(cells, methods, ns, higher_is_better: bool = False, comparisons=(), errors=None,
                   test: str = "welch", names: dict[str, str] | None = None) -> list[dict]:
    """Wilcoxon signed-rank test across datasets for every method pair and every n, plus any
    requested cross-n comparisons (e.g. the GFC paper's GFC at n = 500 against ALC at n = 100).
    When some rows are screens on common folds, every row gets the column ``protocol``."""
    pairs = [(a, n, b, n) for n in ns for a, b in itertools.combinations(methods, 2)]
    rows = [wilcoxon_row(cells, *pair, higher_is_better, errors, test, names) for pair in [*pairs, *comparisons]]
    rows = [r for r in rows if r is not None]
    if any("protocol" in r for r in rows):
        rows = [r if "protocol" in r else r | {"protocol": FULL_PROTOCOL} for r in rows]
    return rows


def _random_splits(keys: pd.Series) -> pd.Series:
    """Per protocol key: whether it is a :class:`rfbench.protocol.Splits` protocol's (random splits)."""
    keys = keys.astype(str)
    return keys.map({key: isinstance(read_key(key), Splits) for key in keys.unique()})


def build(df: pd.DataFrame, alpha: float = 0.05, test: str = "welch", *, registry: Registry):
    """The cells of the results and their layout: datasets in the order of ``registry`` (datasets it
    lacks after them, by name), methods in their first appearance."""
    cells, errors, higher = summarise(df, alpha, test)
    reg = registry.datasets
    ds_order = [d for d in reg if any(k[0] == d for k in cells)]
    ds_order += sorted({k[0] for k in cells} - set(ds_order))
    ns = sorted({k[1] for k in cells})
    first = {}                                  # methods in the order they first appear in the results
    for i, m in enumerate(df["method"].tolist()):
        first.setdefault(m, i)
    methods = sorted({k[2] for k in cells}, key=first.__getitem__)
    # m = rows of one task (training + test part); max over tasks, not max(n_train) + max(n_test),
    # which overcounts by one when the fold sizes differ
    sizes = (df["n_train"] + df["n_test"]).groupby(df["dataset"]).max()
    return cells, errors, ds_order, ns, methods, sizes, higher


def timing_table(df: pd.DataFrame, ds_order, ns, methods) -> list[dict]:
    """Median seconds per outer fold of pre-processing (feature selection of data-dependent
    methods), tuning, fitting and prediction, as in the EERF paper's Tables 3 and 5."""
    done = df[df["status"] == "done"]
    if "preprocess_s" not in done or done["preprocess_s"].isna().all():
        return []
    medians = (done[["dataset", "n_features", "method", "preprocess_s", "tune_s", "fit_s", "predict_s"]]
               .astype({c: float for c in ("preprocess_s", "tune_s", "fit_s", "predict_s")})
               .groupby(["dataset", "n_features", "method"]).median())
    rows = []
    for d in ds_order:
        for n in ns:
            for meth in methods:
                if (d, n, meth) not in medians.index:
                    continue
                med = medians.loc[(d, n, meth)]
                rows.append({"dataset": d, "n": n, "method": meth, "t_pp": med["preprocess_s"],
                             "t_tune": med["tune_s"], "t_fit": med["fit_s"], "t_test": med["predict_s"],
                             "t_pp / (t_tune + t_fit)": med["preprocess_s"] / (med["tune_s"] + med["fit_s"])
                             if med["tune_s"] + med["fit_s"] > 0 else float("nan")})
    return rows


WALLTIME_NOTE = "seconds below one minute, hh:mm:ss from one minute on"


def parse_names(text: str | None) -> dict[str, str]:
    """Display names of methods: 'gfc=GFC,alc=à la carte', or the path of a YAML file (.yaml/.yml)
    mapping registered name to display name. Names of methods not in the results are ignored."""
    if not text or not text.strip():
        return {}
    path = Path(text.strip())
    if path.suffix.lower() in (".yaml", ".yml"):
        if not path.is_file():
            raise UsageError(f"--names file not found: {path}")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UsageError(f"--names file {path} is not plain YAML ({first}); write name: display name lines") from None
        if not isinstance(data, dict):
            raise UsageError(f"--names file {path} must map method names to display names")
        return {str(k): str(v) for k, v in data.items()}
    out = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"--names '{item}' must look like gfc=GFC (comma-separated) or name a .yaml file")
        out[key.strip()] = value.strip()
    return out


_UNITS = {"pt": 1.0, "in": 72.27, "cm": 72.27 / 2.54, "mm": 72.27 / 25.4, "bp": 72.27 / 72}


def parse_length(text) -> float:
    """A TeX length ('469', '469pt', '6.5in', '16.5cm', '165mm', '468bp') in points."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(pt|in|cm|mm|bp)?\s*", str(text))
    if not m or float(m[1]) <= 0:
        raise UsageError(f"--latex-width '{text}' must be a positive length such as 469pt, 6.5in or 16.5cm")
    return float(m[1]) * _UNITS[m[2] or "pt"]


def _display(meth: str, names: dict[str, str]) -> str:
    return names.get(meth, meth)


def _pair_name(a: str, b: str, na, nb, names) -> str:
    a, b = _display(a, names), _display(b, names)
    return f"{a} vs {b}" if na == nb else f"{a}@{na} vs {b}@{nb}"



def bold_rule(test: str, alpha: float, unit: str = "outer folds", seeds: int = 1) -> str:
    """The line under every table that says what bold means and which t-test decides it. With
    several seeds both tests run over every (seed, fold) error, the paired one pairing by seed and
    fold (within a seed the splits are the same for every method): not over the per-seed means,
    whose spread measures only the choice of splits (not the test data) and which would leave the
    test seeds − 1 degrees of freedom. Errors of different seeds share their rows, so p is a little
    optimistic against independent folds; the fold spread in every cell shows the scale."""
    one = unit[:-1].replace("random ", "")
    if seeds > 1:
        how = {"welch": f"Welch's unequal-variance t-test over the {unit} of all {seeds} seeds (each "
                        f"(seed, {one}) error one value, not the per-seed means)",
               "paired": f"paired t-test on the per-fold differences over the {unit} of all {seeds} seeds "
                         f"(paired by seed and {one} number: within a seed the {unit} are identical for every "
                         "method; not the per-seed means)"}[test]
    else:
        how = {"welch": f"Welch's unequal-variance t-test over the {unit}",
               "paired": f"paired t-test on the per-fold differences over the {unit} (paired by "
                         f"{one} number; the {unit} are identical for every method)"}[test]
    return f"bold: significantly better than every other method at that n, {how}, p = {alpha:g}"


def inputs_of(dataset: str, registry: Registry, shapes: Mapping[str, tuple[int, int]] | None = None) -> int | None:
    """The number of inputs of a dataset: the registry's shape, else the one its runs recorded
    (``shapes``), else None (unknown)."""
    entry = registry.datasets.get(dataset)
    if entry is not None and entry.d:
        return entry.d
    return (shapes or {}).get(dataset, (0, None))[1]


def table_model(df: pd.DataFrame, alpha: float = 0.05, comparisons=(), test: str = "welch", *,
                names: dict[str, str] | None = None, registry: Registry,
                shapes: Mapping[str, tuple[int, int]] | None = None,
                time: timing.TimeMeasure = timing.WALL) -> TableModel:
    """The report of the results as a model every format renders (:mod:`rfbench.reporting.render`).
    names: display names of methods; registry: the order and shapes of the datasets
    (:func:`rfbench.registry.load`); shapes: (rows, inputs) the runs recorded of user datasets
    (:meth:`rfbench.store.RunDir.recorded_shapes`), for those the registry lacks or has without a shape;
    time: which seconds ``df``'s ``total_s`` holds (:func:`rfbench.reporting.timing.in_cpu_seconds` puts the
    CPU seconds there for :data:`rfbench.reporting.timing.CPU`), for the captions and headers."""
    names = dict(names or {})
    cells, errors, ds_order, ns, methods, sizes, higher = build(df, alpha, test, registry=registry)
    protocols = set(df["protocol"].astype(str)) if "protocol" in df else set()
    # the unit a task is run on: an outer fold of the nested CV, a random train/test split, the holdout
    unit = ("random splits" if protocols and _random_splits(pd.Series(sorted(protocols))).all()
            else "outer folds")
    seeds = max(c.seeds for c in cells.values())     # several: every cell pools its seeds
    rule = bold_rule(test, alpha, unit, seeds)
    reg = registry.datasets
    metrics = sorted(set(df.loc[df["status"] == "done", "metric"].dropna().astype(str))) if "metric" in df else []
    metric = " / ".join(cells_mod.metric(m).description for m in metrics or ["rmse100"])
    rows = tuple(Row(d, int(sizes.get(d, 0)) or (reg[d].m if d in reg else None), inputs_of(d, registry, shapes))
                 for d in ds_order)
    tests = wilcoxon_table(cells, methods, ns, higher, comparisons, errors, test, names=names)
    few = too_few_datasets(tests)
    if few:                      # a table of dashes says less than one line
        tests = []
    one = unit[:-1].replace("random ", "")
    lead = "Accuracy (%)" if higher else f"Error: {metric}"
    if seeds > 1:
        caption = (f"{lead}, mean over the {unit} of {seeds} seeds (± std across {unit}: the std over one "
                   f"seed's {unit}, mean over seeds; ± std across seeds: the std of the per-seed means); "
                   f"{time.label}: mean {time.caption} to cross-validate one {one} ({WALLTIME_NOTE}).")
    else:
        caption = (f"{lead}, mean (± std) over {unit}; {time.label}: mean {time.caption} to "
                   f"cross-validate one {one} ({WALLTIME_NOTE}).")
    waited = timing.busy_note(df) if time is timing.WALL else None
    if waited:
        caption += f" Walltimes: {waited}."
    screen = None
    if all(c.partial for c in cells.values()):       # nothing complete: the whole report is a screen
        some = next(iter(cells.values()))
        screen = cells_mod.screen_label([e.index for e in errors.values()],
                                        some.expected // some.seeds if some.expected else None)
        screen = f"{screen[0].upper()}{screen[1:]} (not the full protocol)"
        caption = f"{screen}. {caption}"
    if any(c.partial for c in cells.values()):
        tasks = unit if seeds == 1 else f"(seed, {one}) tasks"
        caption += (f" [k/K]: only k of the K {tasks} have finished (a run in progress, or a screen of some folds: --folds); a t-test against "
                    "it runs on the folds both cells have in common, and a Wilcoxon test leaves it out, unless fewer than two datasets are complete: then it is a screen on the "
                    "folds both methods have in common (column protocol).")
    as_sign = sorted(set(df.loc[df["task"].map(fitted_by_sign), "method"])) if "task" in df else []
    if as_sign:
        caption += (f" On classification data, {', '.join(_display(m, names) for m in as_sign)} (regression "
                    "methods) are fitted by ridge/least squares on ±1 labels and predict the sign.")
    times = timing_table(df, ds_order, ns, methods)
    for t in times:
        t["method"] = _display(t["method"], names)
    return TableModel(
        rows=rows, ns=tuple(ns), methods=tuple(methods), names=names,
        cells={k: ResultCell(c.mean, c.std, c.walltime, c.folds, c.expected, c.seeds, c.seed_std, c.unit,
                             bold=c.bold, partial=c.partial) for k, c in cells.items()},
        score="accuracy" if higher else "error", caption=caption, screen=screen, bold_rule=rule, test=test,
        alpha=alpha, seeds=seeds, task_unit=one, wilcoxon=tuple(tests), too_few=few, timing=tuple(times),
        time=time)


def render(df: pd.DataFrame, fmt: str = "text", alpha: float = 0.05, comparisons=(), test: str = "welch", *,
           names: dict[str, str] | None = None, width: int | None = None, label: str | None = None,
           latex_width: float = TEXT_WIDTH_PT, html_fragment: bool = False, registry: Registry,
           shapes: Mapping[str, tuple[int, int]] | None = None, footer=(),
           time: timing.TimeMeasure = timing.WALL) -> str:
    """The report in one format: :func:`table_model` rendered by the format's module. width:
    characters a text line may take (None: the terminal's width, 0: no limit); label, latex_width:
    the LaTeX \\label and the text width (pt) its layout is chosen for; html_fragment: the HTML
    tables without the page around them (for rfbench.experiments.html_page); footer: lines said after
    everything in the formats read as prose (text, Markdown); time: which seconds ``total_s`` holds."""
    renderers.check_format(fmt)        # before the statistics: an unknown format is a usage error
    model = table_model(df, alpha, comparisons, test, names=names, registry=registry, shapes=shapes, time=time)
    model = replace(model, footer=tuple(footer))
    return renderers.render(model, fmt, RenderOptions(width, label, latex_width, html_fragment))
