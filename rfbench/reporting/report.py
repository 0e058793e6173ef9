"""Error/walltime tables in the GFC paper's Table 1 layout, with significance tests.

Rows: dataset, m, d; then for every n_features and method the error mean (± std over outer folds)
and the walltime per outer fold (``0.31 s``, ``12.4 s`` below one minute, ``hh:mm:ss`` from one
minute on: :func:`fmt_walltime`). Bold marks a result significantly better than every other method
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

Layout (``rfbench report --help``):

* Methods are shown by their registered names, or by display names given with ``names``
  (``--names gfc=GFC,alc=à la carte`` or ``--names names.yaml``, a YAML mapping of registered to
  display name; :func:`parse_names`). Display names are used in every format but CSV (which keeps
  the registered names); in LaTeX ``_ % & #`` are escaped and backslash commands pass through, so
  ``alc=\\`a la carte`` also works there (pdflatex reads UTF-8, so ``à la carte`` works everywhere).
* text wraps to ``width`` characters (default: the terminal's width, ``shutil.get_terminal_size``;
  no limit when the output is a file or a pipe; ``--width``, 0 = no limit): a table wider than that is split
  into one table per n, and a table of one n still too wide into column blocks of whole methods
  (the dataset column repeated); the Wilcoxon and timing tables into column blocks; prose is wrapped.
  A block of the key columns and one method wider than ``width`` is printed anyway.
* LaTeX is laid out for a text width of ``latex_width`` points (default 469 pt = 6.5 in, US letter
  with 1 in margins; ``--latex-width``, which takes pt, in, cm, mm or bp): column widths are
  estimated from the Computer Modern character widths, and the first layout that fits is taken:
  one table at ``\\small``; one panel per n at ``\\small``, then at ``\\footnotesize``; the fewest
  panels of whole methods per n that fit at ``\\footnotesize``, split as evenly as possible (and set
  at ``\\small`` when they fit there too); a panel still too wide is scaled down with
  ``\\resizebox{\\textwidth}{!}{...}`` (graphicx). Panels are stacked in one ``table`` float with one
  caption and ``\\label{<label>}`` while they fit a 9 in text height; further ones go to continuation
  floats (``<label>-2``, ...). The Wilcoxon table is ``<label>-wilcoxon``. A comment at the top names
  the packages the output needs (``% requires: booktabs`` and graphicx when it scales a panel).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from tabulate import tabulate

from rfbench.errors import UsageError
from rfbench.execution.progress import hms
from rfbench.formats import TABLE_FORMATS
from rfbench.protocol import Splits, read_key
from rfbench.registry import Registry, or_default
from rfbench.reporting import cells as cells_mod
from rfbench.reporting import stats
from rfbench.reporting.html_markup import document, esc, simple_table
from rfbench.store.record import fitted_by_sign

FORMATS = TABLE_FORMATS
DASH = "–"                   # an empty cell or a value that does not exist (never 'None' or 'nan')
TEXT_WIDTH_PT = 469.0        # LaTeX \textwidth the layout is chosen for: 6.5 in (letter, 1 in margins)
TEXT_HEIGHT_PT = 650.0       # \textheight (9 in): panels beyond it go to a continuation float
DEFAULT_LABEL = "tab:rfbench"
HTML_METHODS_PER_TABLE = 5   # method column groups of one HTML table: five fit a 1280 px window


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


FULL_PROTOCOL = "full protocol"
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


def build(df: pd.DataFrame, alpha: float = 0.05, test: str = "welch", registry: Registry | None = None):
    """The cells of the results and their layout: datasets in the order of ``registry`` (default: the
    one built now; datasets it lacks after them, by name), methods in their first appearance."""
    cells, errors, higher = summarise(df, alpha, test)
    reg = or_default(registry).datasets
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


def fmt_walltime(seconds) -> str:
    """Seconds per outer fold as the tables print them: '0.31 s' below 10 s, '12.4 s' below one
    minute, hh:mm:ss ('00:03:49') from one minute on, so the speed of fast methods stays visible."""
    if seconds is None or not math.isfinite(float(seconds)):
        return DASH
    s = float(seconds)
    if s == 0:
        return "0 s"
    if s < 0.005:
        return "<0.01 s"
    if round(s, 2) < 10:
        return f"{s:.2f} s"
    if round(s, 1) < 60:
        return f"{s:.1f} s"
    return hms(s)


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


def _widths(groups: dict[str, float]) -> dict[str, float]:
    return {c: w for chars, w in groups.items() for c in chars}


# Widths in pt of Computer Modern at 10 pt (cmr10, cmbx10), measured with pdflatex's \settowidth;
# a LaTeX size scales them by FONT_SIZES (cmr9/cmr8 are relatively wider than cmr10 scaled; the factor
# is the largest ratio measured on table strings, so estimates err on the wide side).
_RM = _widths({"!',.:;[]`il": 2.78, "j": 3.06, " -": 3.33, "I": 3.61, "f": 3.83, "()t": 3.89, "r": 3.92,
               "s": 3.94, "cez": 4.44, "?": 4.72, "$*/0123456789ao": 5.0, "Jg": 5.14, "kqx–": 5.28, "vy": 5.42,
               "Sbdhnpu": 5.56, "Z": 6.11, "L": 6.25, "F": 6.53, "EP": 6.81, "B": 7.08, "CT": 7.22, "Rw": 7.36,
               "AHNUX": 7.5, "DV": 7.64, "Y": 7.75, "&+=<>@KOQ±×": 7.78, "G": 7.85, "#%m": 8.33, "M": 9.17,
               "W": 10.42, "\u2009": 1.67})
_BF = _widths({"',.:;[]`il": 3.19, "!": 3.5, "j": 3.51, " -": 3.83, "I": 4.36, "()t": 4.47, "s": 4.54, "f": 4.6,
               "r": 4.74, "cz": 5.11, "e": 5.27, "?": 5.43, "a": 5.59, "$*/0123456789o": 5.75, "g": 5.91,
               "J": 5.94, "kqx–": 6.07, "vy": 6.23, "Sbdhnpu": 6.39, "L": 6.92, "Z": 7.03, "F": 7.24, "E": 7.56,
               "±×": 7.78, "P": 7.86, "T": 8.0, "B": 8.18, "C": 8.31, "w": 8.47, "R": 8.62, "OQ": 8.64, "AX": 8.69,
               "D": 8.82, "UV": 8.85, "&+=<>@": 8.94, "Y": 8.98, "HN": 9.0, "K": 9.01, "G": 9.04, "#%m": 9.58,
               "M": 10.92, "W": 12.05, "\u2009": 1.92})
FONT_SIZES = {"small": 0.937, "footnotesize": 0.862}
_BASELINE = {"small": 11.0, "footnotesize": 9.5}     # \baselineskip of the size in a 10 pt article
COLUMN_SEP = 12.0                                       # 2 \tabcolsep between two columns (pt, any size)


def text_pt(text: str, bold: bool = False) -> float:
    """Estimated width (pt at 10 pt) of plain text; an unknown character counts as wide as an 'M'."""
    table = _BF if bold else _RM
    return sum(table.get(c, table["M"]) for c in str(text))


def _display(meth: str, names: dict[str, str]) -> str:
    return names.get(meth, meth)


def _pair_name(a: str, b: str, na, nb, names) -> str:
    a, b = _display(a, names), _display(b, names)
    return f"{a} vs {b}" if na == nb else f"{a}@{na} vs {b}@{nb}"


def _spread(cell: Cell) -> str:
    """'±0.36' (one seed), or '±0.36 folds, ±0.05 seeds': the spread across folds (mean over seeds
    of one seed's std over its folds) apart from the spread across seeds (std of the seed means);
    '±–' where each seed has one fold (no spread measured, not a spread of zero)."""
    std = f"{cell.std:.2f}" if cell.folds > cell.seeds else DASH
    if cell.seed_std is None:
        return f"±{std}"
    return f"±{std} {cell.unit}, ±{cell.seed_std:.2f} seeds"


def _fmt_cell(cell: Cell | None, fmt: str) -> tuple[str, str]:
    if cell is None:
        return DASH, DASH
    spread = _spread(cell)
    err = f"{cell.mean:.2f} ({spread})"
    if cell.bold:
        err = {"markdown": f"**{cell.mean:.2f}** ({spread})",
               "html": f"<b>{cell.mean:.2f}</b> ({spread})"}.get(fmt, err + " *")
    if cell.partial:
        err += f" [{cell.folds}/{cell.expected}]"
    return err, fmt_walltime(cell.walltime)


def _missing(x):
    """None and NaN → None (tabulate prints its missingval, the en dash, for it)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def wrap(text: str, width: int | None) -> str:
    """Prose wrapped to width characters (paragraphs kept); width None or ≤ 0: unchanged."""
    if not width or width <= 0:
        return text
    return "\n".join(textwrap.fill(p, width, break_on_hyphens=False) if p.strip() else p
                     for p in text.split("\n"))


def terminal_width() -> int:
    """The width text output wraps to by default: the terminal's when standard output is one (or
    ``$COLUMNS`` when set); 0, no limit, when it goes to a file or a pipe, where wrapping would only
    cut a table into "continued" blocks."""
    if os.environ.get("COLUMNS") or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return 0


def _line_width(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def _cell_text(x, floatfmt: str = "g") -> str:
    x = _missing(x)
    if x is None:
        return DASH
    if isinstance(x, (float, np.floating)):
        return format(float(x), floatfmt)
    return str(x)


def _simple_table(header, rows, colalign) -> str:
    """A plain-text table in tabulate's 'simple' look, two spaces between columns and no padding
    around headers; a header may have several lines (bottom-aligned)."""
    heads = [str(h).split("\n") for h in header]
    depth = max(len(h) for h in heads)
    heads = [[""] * (depth - len(h)) + h for h in heads]
    widths = [max([len(x) for x in h] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]

    def line(cells):
        return "  ".join(c.rjust(w) if a == "right" else c.ljust(w)
                         for c, w, a in zip(cells, widths, colalign, strict=True)).rstrip()

    return "\n".join([*(line([h[k] for h in heads]) for k in range(depth)), "  ".join("-" * w for w in widths),
                      *(line(r) for r in rows)])


def _records_table(records: list[dict], floatfmt: str):
    """Header, string rows and alignment (numbers right) of a list of dicts with the same keys."""
    header = list(records[0])
    rows = [[_cell_text(r[k], floatfmt) for k in header] for r in records]
    numeric = [all(isinstance(_missing(r[k]), (int, float, np.integer, np.floating)) or _missing(r[k]) is None
                   for r in records) for k in header]
    return header, rows, ["right" if num else "left" for num in numeric]


def _balanced(items: list, parts: int, larger_first: bool = True) -> list[list]:
    """items cut into parts contiguous chunks whose sizes differ by at most one."""
    q, r = divmod(len(items), parts)
    out, i = [], 0
    for j in range(parts):
        size = q + (j < r if larger_first else j >= parts - r)
        out.append(items[i:i + size])
        i += size
    return [c for c in out if c]


def fit_columns(header, rows, width, keep_first, keep_rest, groups, colalign) -> list[str]:
    """The table as one block or, when wider than width characters, as column blocks that each fit:
    every block starts with the key columns (keep_first in the first block, keep_rest in the
    others), and the column groups (lists of column indices kept together, e.g. a method's error
    and walltime) are packed greedily. A group that does not fit even alone gets a block of its own."""
    def table(cols):
        return _simple_table([header[c] for c in cols], [[r[c] for c in cols] for r in rows],
                             [colalign[c] for c in cols])

    def block(i, chunk):
        return table((keep_rest if i else keep_first) + [c for g in chunk for c in g])

    chunks, cur = [], []            # greedy: the fewest blocks; then as even as that number allows
    for g in groups:
        if cur and width and width > 0 and _line_width(block(len(chunks), [*cur, g])) > width:
            chunks.append(cur)
            cur = [g]
        else:
            cur.append(g)
    chunks.append(cur)
    for larger_first in (True, False):
        even = _balanced(list(groups), len(chunks), larger_first)
        if len(chunks) > 1 and all(_line_width(block(i, ch)) <= width for i, ch in enumerate(even)):
            chunks = even
            break
    return [block(i, chunk) for i, chunk in enumerate(chunks)]


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


def render(df: pd.DataFrame, fmt: str = "text", alpha: float = 0.05, comparisons=(), test: str = "welch", *,
           names: dict[str, str] | None = None, width: int | None = None, label: str | None = None,
           latex_width: float = TEXT_WIDTH_PT, html_fragment: bool = False, registry: Registry | None = None,
           shapes: Mapping[str, tuple[int, int]] | None = None) -> str:
    """The report in one format. names: display names of methods; width: characters a text line may
    take (None: the terminal's width, 0: no limit); label, latex_width: the LaTeX \\label and the
    text width (pt) its layout is chosen for; html_fragment: the HTML tables without the page
    around them (for rfbench.experiments.html_page); registry: the order and shapes of the datasets (default:
    the one built now); shapes: (rows, inputs) the runs recorded of user datasets
    (:meth:`rfbench.store.RunDir.recorded_shapes`), for those the registry lacks or has without a shape."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
    names = dict(names or {})
    registry = or_default(registry)
    cells, errors, ds_order, ns, methods, sizes, higher = build(df, alpha, test, registry)
    protocols = set(df["protocol"].astype(str)) if "protocol" in df else set()
    # the unit a task is run on: an outer fold of the nested CV, a random train/test split, the holdout
    unit = ("random splits" if protocols and _random_splits(pd.Series(sorted(protocols))).all()
            else "outer folds")
    seeds = max(c.seeds for c in cells.values())     # several: every cell pools its seeds
    rule = bold_rule(test, alpha, unit, seeds)
    reg = registry.datasets
    metrics = sorted(set(df.loc[df["status"] == "done", "metric"].dropna().astype(str))) if "metric" in df else []
    metric = " / ".join(cells_mod.metric(m).description for m in metrics or ["rmse100"])
    if fmt == "csv":
        rows = [{"dataset": d, "m": int(sizes.get(d, 0)) or (reg[d].m if d in reg else None),
                 "d": inputs_of(d, registry, shapes), "n_features": n, "method": meth,
                 "error_mean": c.mean, "error_std": c.std if c.folds > c.seeds else None, "walltime_s": c.walltime, "folds": c.folds,
                 "bold": c.bold, "bold_test": f"{test} p={alpha:g}"}   # a line would break the CSV
                | ({"error_std_seeds": c.seed_std, "seeds": c.seeds} if seeds > 1 else {})
                for d in ds_order for n in ns for meth in methods if (c := cells.get((d, n, meth)))]
        return pd.DataFrame(rows).to_csv(index=False)
    score = "accuracy" if higher else "error"          # what the table's numbers are
    keys = [(d, int(sizes.get(d, 0)) or (reg[d].m if d in reg else DASH), inputs_of(d, registry, shapes) or DASH)
            for d in ds_order]
    tests = wilcoxon_table(cells, methods, ns, higher, comparisons, errors, test, names=names)
    few = too_few_datasets(tests)
    if few:                      # a table of dashes says less than one line
        tests = []
    one = unit[:-1].replace("random ", "")
    lead = "Accuracy (%)" if higher else f"Error: {metric}"
    if seeds > 1:
        caption = (f"{lead}, mean over the {unit} of {seeds} seeds (± std across {unit}: the std over one "
                   f"seed's {unit}, mean over seeds; ± std across seeds: the std of the per-seed means); "
                   f"walltime: mean time to cross-validate one {one} ({WALLTIME_NOTE}).")
    else:
        caption = (f"{lead}, mean (± std) over {unit}; walltime: mean time to "
                   f"cross-validate one {one} ({WALLTIME_NOTE}).")
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
    as_sign = sorted(set(df.loc[df["task"].map(fitted_by_sign), "method"]))
    if as_sign:
        caption += (f" On classification data, {', '.join(_display(m, names) for m in as_sign)} (regression "
                    "methods) are fitted by ridge/least squares on ±1 labels and predict the sign.")
    if fmt == "latex":
        return _latex(keys, cells, ns, methods, names, tests, caption, score, rule, test,
                      label or DEFAULT_LABEL, latex_width, few)
    times = timing_table(df, ds_order, ns, methods)
    for t in times:
        t["method"] = _display(t["method"], names)
    if fmt == "html":
        plain = caption.removeprefix(f"{screen}. ") if screen else caption      # the banner says it
        fragment = _html(keys, cells, ns, methods, names, tests, times, plain, rule, score, one, screen, few)
        if html_fragment:
            return fragment
        return document("rfbench report", [fragment])
    if fmt == "text":
        return _text(keys, cells, ns, methods, names, tests, times, caption, rule, score, one,
                     terminal_width() if width is None else width, few)
    header = ["dataset", "m", "d"]
    for n in ns:
        for meth in methods:
            header += [f"n={n} {_display(meth, names)} {score}", f"n={n} {_display(meth, names)} walltime"]
    body = [[d, m, dd] + [x for n in ns for meth in methods for x in _fmt_cell(cells.get((d, n, meth)), fmt)]
            for d, m, dd in keys]
    out = [caption, "", tabulate(body, headers=header, tablefmt="github", disable_numparse=True, missingval=DASH),
           "", rule[0].upper() + rule[1:] + "."]
    if few:
        out += ["", few]
    if tests:
        out += ["", WILCOXON_NOTE, "",
                tabulate([{k: _missing(v) for k, v in t.items()} for t in tests], headers="keys",
                         tablefmt="github", floatfmt=".4g", missingval=DASH)]
    if times:
        out += ["", timing_note(one), "",
                tabulate([{k: _missing(v) for k, v in t.items()} for t in times], headers="keys",
                         tablefmt="github", floatfmt=".3g", missingval=DASH)]
    return "\n".join(out) + "\n"


WILCOXON_NOTE = ("Wilcoxon signed-rank test across datasets (T = min(W+, W−); reject equality at 95 % "
                 "when T ≤ T_crit; T_crit_normal is the normal approximation the GFC paper quotes):")


def timing_note(one: str) -> str:
    return (f"Time per {one} (median seconds; t_pp = feature pre-processing of data-dependent "
            "methods, part of t_fit):")


def _methods_at(cells, keys, ns, methods) -> dict:
    """The methods with at least one cell at each n (a panel of one n leaves out the others)."""
    return {n: [m for m in methods if any((d, n, m) in cells for d, _, _ in keys)] for n in ns}


def _text(keys, cells, ns, methods, names, tests, times, caption, rule, score, one, width, few=None) -> str:
    """The text report, every line at most width characters when the columns allow it: the main
    table as one table, else one table per n, each split into column blocks of whole methods."""
    def main(pairs, with_n):
        header = ["dataset", "m", "d"]
        for n, meth in pairs:
            name = _display(meth, names)
            header += [f"n={n} {name}\n{score}" if with_n else f"{name}\n{score}", "walltime"]
        rows = [[d, str(m), str(dd)] + [x for n, meth in pairs for x in _fmt_cell(cells.get((d, n, meth)), "text")]
                for d, m, dd in keys]
        colalign = ["left", "right", "right"] + ["left", "right"] * len(pairs)
        groups = [[3 + 2 * i, 4 + 2 * i] for i in range(len(pairs))]
        return header, rows, colalign, groups

    out = [wrap(caption, width), ""]
    header, body, colalign, groups = main([(n, m) for n in ns for m in methods], True)
    single = _simple_table(header, body, colalign)
    if not width or width <= 0 or _line_width(single) <= width:
        out += [single]
    else:
        at = _methods_at(cells, keys, ns, methods)
        for i, n in enumerate(ns):
            header, body, colalign, groups = main([(n, m) for m in at[n]], False)
            blocks = fit_columns(header, body, width, [0, 1, 2], [0], groups, colalign)
            for j, block in enumerate(blocks):
                out += ([""] if i or j else []) + [f"n = {n}" + (" (continued)" if j else ""), block]
    out += ["", wrap("* = " + rule + ".", width)]
    if few:
        out += ["", wrap(few, width)]
    if tests:
        header, body, colalign = _records_table(tests, ".4g")
        blocks = fit_columns(header, body, width, [0, 1], [0, 1], [[i] for i in range(2, len(header))], colalign)
        out += ["", wrap(WILCOXON_NOTE, width), "", "\n\n".join(blocks)]
    if times:
        header, body, colalign = _records_table(times, ".3g")
        blocks = fit_columns(header, body, width, [0, 1, 2], [0, 1, 2], [[i] for i in range(3, len(header))],
                              colalign)
        out += ["", wrap(timing_note(one), width), "", "\n\n".join(blocks)]
    return "\n".join(out) + "\n"


def latex_text(s) -> str:
    """Plain text as LaTeX: the special characters the reports contain escaped, and the Unicode
    signs they use as math (pdflatex would need them declared); backslash commands pass through."""
    s = str(s)
    for a, b in (("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"), ("±", r"$\pm$"), ("×", r"$\times$"),
                 ("−", "$-$"), ("≤", r"$\le$"), ("–", "--"), ("<", "$<$"), (">", "$>$")):
        s = s.replace(a, b)
    return s


def _tex_walltime(seconds) -> str:
    return latex_text(fmt_walltime(seconds)).replace(" s", r"\,s")


@dataclass
class _Panel:
    """One tabular of the LaTeX table: the (n, method) column pairs it shows; with_md: it has the
    m and d columns (the first panel of an n); n: the n every pair has (None: several)."""
    pairs: list
    with_md: bool
    n: int | None
    continued: bool = False


def _latex_layout(panel_width, ns, at, width_pt):
    """The first layout whose panels all fit width_pt (see the module docstring): (size, panels,
    description); panels still too wide are scaled down by the caller."""
    single = [_Panel([(n, m) for n in ns for m in at[n]], True, ns[0] if len(ns) == 1 else None)]
    per_n = [_Panel([(n, m) for m in at[n]], True, n) for n in ns]
    tries = [("small", single, "one table"), ("small", per_n, "one panel per n"),
             ("footnotesize", per_n, "one panel per n")]
    if len(ns) == 1:
        tries = tries[:1] + tries[2:]
    for size, panels, what in tries:
        if all(panel_width(p, size) <= width_pt for p in panels):
            return size, panels, what

    def blocks(n, chunks):
        return [_Panel(chunk, i == 0, n, i > 0) for i, chunk in enumerate(chunks)]

    def fit(size, panels):
        return all(panel_width(p, size) <= width_pt for p in panels)

    panels = []
    for n in ns:      # the fewest panels of whole methods that fit at \footnotesize, as even as possible
        pairs = [(n, m) for m in at[n]]
        splits = [_balanced(pairs, k, first) for k in range(2, len(pairs) + 1) for first in (True, False)]
        panels.append((n, next((c for c in splits if fit("footnotesize", blocks(n, c))), splits[-1])))
    for size in ("small", "footnotesize"):
        if all(fit(size, blocks(n, chunks)) for n, chunks in panels):
            break
    return size, [p for n, chunks in panels for p in blocks(n, chunks)], "panels of whole methods"


def _latex(keys, cells, ns, methods, names, tests, caption, score, rule, test, label, width_pt, few=None) -> str:
    # every cell as LaTeX with its estimated width (pt at 10 pt)
    tex: dict = {}
    for d, _, _ in keys:
        for n in ns:
            for meth in methods:
                c = cells.get((d, n, meth))
                if c is None:
                    tex[(d, n, meth)] = ("--", text_pt("–"), "--", text_pt("–"))
                    continue
                mean, spread = f"{c.mean:.2f}", _spread(c)
                err = (f"\\textbf{{{mean}}}" if c.bold else mean) + f" ({latex_text(spread)})"
                w = text_pt(mean, c.bold) + text_pt(f" ({spread})")
                if c.partial:
                    err += f" [{c.folds}/{c.expected}]"
                    w += text_pt(f" [{c.folds}/{c.expected}]")
                tex[(d, n, meth)] = (err, w, _tex_walltime(c.walltime),
                                     text_pt(fmt_walltime(c.walltime).replace(" s", "\u2009s")))
    key_w = [max(text_pt("Dataset"), *(text_pt(d) for d, _, _ in keys)), max(text_pt("m"), *(text_pt(m) for _, m, _ in keys)),
             max(text_pt("d"), *(text_pt(dd) for _, _, dd in keys))]
    pair_w = {}
    for n in ns:
        for meth in methods:
            e = max(text_pt(score.capitalize()), *(tex[(d, n, meth)][1] for d, _, _ in keys))
            w = max(text_pt("Walltime"), *(tex[(d, n, meth)][3] for d, _, _ in keys))
            pair_w[(n, meth)] = (e, w + max(0.0, text_pt(_display(meth, names)) - e - w))

    def panel_width(p: _Panel, size: str) -> float:
        cols = key_w if p.with_md else key_w[:1]
        text = sum(cols) + sum(sum(pair_w[pair]) for pair in p.pairs)
        return text * FONT_SIZES[size] + COLUMN_SEP * (len(cols) + 2 * len(p.pairs) - 1)

    at = _methods_at(cells, keys, ns, methods)
    size, panels, what = _latex_layout(panel_width, ns, at, width_pt)
    scaled = [panel_width(p, size) > width_pt for p in panels]

    def tabular(p: _Panel) -> list[str]:
        k = 3 if p.with_md else 1
        pad = " & " * (k - 1)
        groups = [(n, [m for nn, m in p.pairs if nn == n]) for n in dict.fromkeys(n for n, _ in p.pairs)]
        cont = " (continued)" if p.continued else ""
        lines = [f"\\begin{{tabular}}{{@{{}}{'lrr' if p.with_md else 'l'}{'rr' * len(p.pairs)}@{{}}}}", r"\toprule"]
        lines.append(pad + " & " + " & ".join(f"\\multicolumn{{{2 * len(ms)}}}{{c}}{{$n = {n}${cont}}}"
                                              for n, ms in groups) + r" \\")
        start, rules = k + 1, []
        for _, ms in groups:
            rules.append(f"\\cmidrule(lr){{{start}-{start + 2 * len(ms) - 1}}}")
            start += 2 * len(ms)
        lines.append(" ".join(rules))
        lines.append(pad + " & " + " & ".join(f"\\multicolumn{{2}}{{c}}{{{latex_text(_display(m, names))}}}"
                                              for _, m in p.pairs) + r" \\")
        lines.append(" ".join(f"\\cmidrule(lr){{{k + 1 + 2 * i}-{k + 2 + 2 * i}}}" for i in range(len(p.pairs))))
        lines.append(("Dataset & $m$ & $d$ & " if p.with_md else "Dataset & ")
                     + " & ".join([f"{score.capitalize()} & Walltime"] * len(p.pairs)) + r" \\")
        lines.append(r"\midrule")
        for d, m, dd in keys:
            row = [latex_text(d)] + ([latex_text(m), latex_text(dd)] if p.with_md else [])
            for n, meth in p.pairs:
                err, _, wall, _ = tex[(d, n, meth)]
                row += [err, wall]
            lines.append(" & ".join(row) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        return lines

    # panels stacked in floats while they fit the text height
    def lines_of(text: str, pt_per_line: float, font: float) -> int:
        return math.ceil(text_pt(text) * font / width_pt) * pt_per_line
    overhead = lines_of(caption, 12.0, 1.0) + lines_of(rule, 9.5, 0.862) + 40
    panel_h = (len(keys) + 4) * _BASELINE[size] + 16
    floats, height = [[]], overhead
    for i, _ in enumerate(panels):
        if floats[-1] and height + panel_h + 8 > TEXT_HEIGHT_PT:
            floats.append([])
            height = overhead
        floats[-1].append(i)
        height += panel_h + 8
    packages = "booktabs, graphicx" if any(scaled) or _wilcoxon_scaled(tests, test, width_pt) else "booktabs"
    out = [f"% requires: {packages}",
           f"% layout for a text width of {width_pt:.4g}pt ({width_pt / 72.27:.1f} in; rfbench report --latex-width): "
           f"{what} at \\{size}" + (f"; {sum(scaled)} panel(s) scaled down to the text width" if any(scaled) else ""),
           f"% labels: {label}" + "".join(f", {label}-{j + 1}" for j in range(1, len(floats)))
           + (f", {label}-wilcoxon" if tests else "")]
    for j, members in enumerate(floats):
        out += [r"\begin{table}[tbp]", r"\centering"]
        out.append(f"\\caption{{{latex_text(caption)}}}" if j == 0 else f"\\caption{{Table~\\ref{{{label}}}, continued.}}")
        out.append(f"\\label{{{label}}}" if j == 0 else f"\\label{{{label}-{j + 1}}}")
        out.append(f"\\{size}")
        for i in members:
            if i != members[0]:
                out += ["", r"\medskip"]
            body = tabular(panels[i])
            out += ([r"\resizebox{\textwidth}{!}{%", *body, "}"] if scaled[i] else body)
        out += ["", r"\smallskip", f"{{\\footnotesize {latex_text(rule[0].upper() + rule[1:])}.\\par}}", r"\end{table}", ""]
    if few:
        out += [f"\\noindent{{\\footnotesize {latex_text(few)}\\par}}", ""]
    if tests:
        out += _latex_wilcoxon(tests, test, label, width_pt)
    return "\n".join(out).rstrip("\n") + "\n"


def _wilcoxon_cells(tests, test) -> list[list[str]]:
    def num(x, spec="g"):
        x = _missing(x)
        return "--" if x is None else format(x, spec)
    def pair(t):
        screen = t.get("protocol", FULL_PROTOCOL)
        return t["pair"] + ("" if screen == FULL_PROTOCOL else f" ({screen})")
    return [[str(t["n"]), latex_text(pair(t)), str(t["datasets"]), num(t["T"]), num(t["T_crit_95"]),
             num(t["T_crit_95_normal"]), num(t["p"], ".3g"), str(t.get(f"{test} W/T/L (a)", "--"))] for t in tests]


_WILCOXON_HEAD = [r"$n$", "Pair", "Datasets", r"$T$", r"$T_{\mathrm{crit}}$", r"$T_{\mathrm{crit}}^{\mathrm{normal}}$",
                  r"$p$"]
_WILCOXON_HEAD_PT = [text_pt("n"), text_pt("Pair"), text_pt("Datasets"), text_pt("T"), text_pt("Tcrit"), text_pt("Tnormal"), text_pt("p")]


def _wilcoxon_width(tests, test: str, size: str) -> float:
    rows = _wilcoxon_cells(tests, test) if tests else []
    cols = [max(h, *(text_pt(r[i].replace("\\_", "_")) for r in rows)) for i, h in enumerate(_WILCOXON_HEAD_PT)]
    cols.append(max([text_pt("Paired W/T/L")] + [text_pt(r[7]) for r in rows]))
    return sum(cols) * FONT_SIZES[size] + COLUMN_SEP * (len(cols) - 1)


def _wilcoxon_scaled(tests, test, width_pt) -> bool:
    return bool(tests) and _wilcoxon_width(tests, test, "footnotesize") > width_pt


def _latex_wilcoxon(tests, test, label, width_pt) -> list[str]:
    size = "small" if _wilcoxon_width(tests, test, "small") <= width_pt else "footnotesize"
    scaled = _wilcoxon_scaled(tests, test, width_pt)
    body = [r"\begin{tabular}{@{}rlrrrrrc@{}}", r"\toprule",
            " & ".join(_WILCOXON_HEAD) + f" & {test.capitalize()} W/T/L \\\\", r"\midrule"]
    body += [" & ".join(row) + r" \\" for row in _wilcoxon_cells(tests, test)]
    body += [r"\bottomrule", r"\end{tabular}"]
    return [r"\begin{table}[tbp]", r"\centering",
            r"\caption{Wilcoxon signed-rank test across datasets ($T = \min(W^+, W^-)$; "
            r"significant at 95\,\% when $T \le T_{\mathrm{crit}}$"
            + ("; --: no critical value exists for so few datasets" if any(
                _missing(t[k]) is None for t in tests for k in ("T_crit_95", "T_crit_95_normal")) else "") + ").}",
            f"\\label{{{label}-wilcoxon}}", f"\\{size}",
            *([r"\resizebox{\textwidth}{!}{%", *body, "}"] if scaled else body), r"\end{table}"]


def _html(keys, cells, ns, methods, names, tests, times, caption, rule, score, one, screen=None, few=None) -> str:
    """The report as an HTML fragment (rfbench.experiments.html_page wraps it into a page): a banner when the
    whole report is a screen, one table per n with a column group per method (error, walltime), bold
    and shaded where significantly best; then the Wilcoxon and timing tables. Every text is escaped."""
    at = _methods_at(cells, keys, ns, methods)

    def table(n, shown, continued) -> str:
        head = ['<tr><th class="l" rowspan="2">dataset</th><th rowspan="2">m</th><th rowspan="2">d</th>'
                + "".join(f'<th class="g" colspan="2">{esc(_display(m, names))}</th>' for m in shown) + "</tr>",
                "<tr>" + f'<th class="g">{esc(score)}</th><th>walltime</th>' * len(shown) + "</tr>"]
        body = []
        for d, m, dd in keys:
            tds = [f'<td class="l">{esc(d)}</td><td>{esc(m)}</td><td>{esc(dd)}</td>']
            for meth in shown:
                c = cells.get((d, n, meth))
                if c is None:
                    tds.append(f'<td class="g">{DASH}</td><td>{DASH}</td>')
                    continue
                mean = f"<b>{c.mean:.2f}</b>" if c.bold else f"{c.mean:.2f}"
                part = (f' <span class="partial" title="{c.folds} of {c.expected} finished">[{c.folds}/{c.expected}]'
                        "</span>" if c.partial else "")
                best = "g best" if c.bold else "g"
                tds.append(f'<td class="{best}">{mean} ({esc(_spread(c))}){part}</td>'
                           f"<td>{esc(fmt_walltime(c.walltime))}</td>")
            body.append("<tr>" + "".join(tds) + "</tr>")
        return (f"<h3>n = {esc(n)}{' (continued)' if continued else ''}</h3>"
                + '<div class="scroll"><table class="results"><thead>' + "".join(head)
                + "</thead><tbody>" + "".join(body) + "</tbody></table></div>")

    # one table per n, of at most HTML_METHODS_PER_TABLE methods (as even as possible): wider ones
    # would scroll in a 1280 px window and hide the last methods' marks
    tables = [table(n, chunk, i > 0) for n in ns if at[n]
              for i, chunk in enumerate(_balanced(at[n], math.ceil(len(at[n]) / HTML_METHODS_PER_TABLE)))]

    parts = ['<h2 id="table">Results</h2>',
             *([f'<p class="banner"><b>{esc(screen)}</b>: every statistic below is computed on the folds the '
                "compared cells have in common.</p>"] if screen else []),
             f'<p class="caption">{esc(caption)}</p>',
             *tables,
             f"<p>{esc(rule[0].upper() + rule[1:])}; bold cells are shaded.</p>"]
    parts.append('<h2 id="wilcoxon">Wilcoxon signed-rank tests across datasets</h2>')
    if few:
        parts.append(f'<p class="note">{esc(few)}</p>')
    elif tests:
        columns = list(tests[0])
        rows = [[_cell_text(t[k], ".4g") for k in columns] for t in tests]
        classes = ["screen" if t.get("protocol", FULL_PROTOCOL) != FULL_PROTOCOL else "" for t in tests]
        parts += [f"<p>{esc(WILCOXON_NOTE)}</p>", simple_table(columns, rows, left=2, row_classes=classes)]
    else:
        parts.append('<p class="note">no pair of methods has two datasets to compare on</p>')
    if times:
        columns = list(times[0])
        parts += [f"<h3>{esc(timing_note(one))}</h3>",
                  simple_table(columns, [[_cell_text(t[k], ".3g") for k in columns] for t in times], left=3)]
    return "\n".join(parts)
