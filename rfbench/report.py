"""Error/walltime tables in the GFC paper's Table 1 layout, with significance tests.

Rows: dataset, m, d; then for every n_features and method the error mean (± std over outer folds)
and the walltime per outer fold (hh:mm:ss). Bold marks a result significantly better than every
other method at the same n (Welch's t-test over the outer folds, p = 0.05, or with ``test="paired"``
the paired t-test on the per-fold differences); a line under the table says which. Below the table:
the Wilcoxon signed-rank test across datasets for every method pair and n.
"""

from __future__ import annotations

import html as html_lib
import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tabulate import tabulate

from rfbench import stats
from rfbench.errors import UsageError
from rfbench.protocol import outer_count_of_key
from rfbench.registry import datasets as registered_datasets
from rfbench.runner import hms

FORMATS = ("text", "markdown", "latex", "csv", "html")


@dataclass
class Cell:
    mean: float
    std: float
    walltime: float
    folds: int
    bold: bool = False
    expected: int | None = None     # folds of a complete cell under its protocol (None: unknown)

    @property
    def partial(self) -> bool:
        """Fewer folds finished than the protocol has (a run in progress)."""
        return self.expected is not None and self.folds < self.expected


def lower(x: pd.Series, y: pd.Series, alpha: float = 0.05, test: str = "welch") -> bool:
    """x significantly lower than y (fold errors indexed by fold number). The paired test pairs
    the same fold of both cells (the folds are identical for every method) and uses only the folds
    both cells have."""
    if test == "paired":
        x, y = x.align(y, join="inner")
    return stats.significantly_lower(x, y, alpha, test)


def summarise(df: pd.DataFrame, alpha: float = 0.05, test: str = "welch"):
    """Per (dataset, n, method) cells, the fold errors (indexed by fold), and the bold marks."""
    if test not in stats.TESTS:
        raise UsageError(f"unknown test '{test}'; use one of {', '.join(stats.TESTS)}")
    done = df[df["status"] == "done"].copy()
    if done.empty:
        raise UsageError("no finished tasks in these results (every record is an error or timeout)")
    done["error"] = done["error"].astype(float)
    cells: dict[tuple, Cell] = {}
    errors: dict[tuple, pd.Series] = {}
    for (ds, n, meth), g in done.groupby(["dataset", "n_features", "method"], sort=True):
        e = g.set_index("fold")["error"].sort_index()
        errors[(ds, n, meth)] = e
        # folds of a complete cell: known when every fold's protocol key can be read
        counts = {outer_count_of_key(k) for k in g["protocol"]} if "protocol" in g else {None}
        cells[(ds, n, meth)] = Cell(float(e.mean()), float(e.std(ddof=1)) if e.size > 1 else 0.0,
                                    float(g["total_s"].astype(float).mean()), int(e.size),
                                    expected=None if None in counts else max(counts))
    higher_is_better = set(done["metric"].dropna()) == {"accuracy"}
    for (ds, n, meth), cell in cells.items():
        others = [k for k in cells if k[0] == ds and k[1] == n and k[2] != meth]
        if not others:
            continue
        mine = -errors[(ds, n, meth)] if higher_is_better else errors[(ds, n, meth)]
        cell.bold = all(lower(mine, -errors[o] if higher_is_better else errors[o], alpha, test) for o in others)
    return cells, errors, higher_is_better


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


def wilcoxon_row(cells, a, na, b, nb, higher_is_better: bool, errors=None, test: str = "welch") -> dict | None:
    """Wilcoxon signed-rank test of method a at n = na against b at n = nb across datasets, with
    the per-dataset t-test win/tie/loss record when the fold errors are given."""
    def complete(meth, n):     # the mean of a run in progress is not the cell's result
        return {k[0] for k, c in cells.items() if k[1:] == (n, meth) and not c.partial}

    common = sorted(complete(a, na) & complete(b, nb))
    if len(common) < 2:
        return None
    ea = np.array([cells[(d, na, a)].mean for d in common])
    eb = np.array([cells[(d, nb, b)].mean for d in common])
    T, p, N = stats.wilcoxon(ea, eb)
    real = ~stats.ties(ea, eb)                    # a tie (1e-14 apart) is no win
    a_better = (ea > eb if higher_is_better else ea < eb) & real
    b_better = (eb > ea if higher_is_better else eb < ea) & real
    pair = f"{a} vs {b}" if na == nb else f"{a}@{na} vs {b}@{nb}"
    row = {"n": na if na == nb else f"{na}/{nb}", "pair": pair, "datasets": len(common), "N (non-ties)": N,
           "T": T, "T_crit_95": stats.wilcoxon_critical_value(N),
           "T_crit_95_normal": stats.wilcoxon_critical_value(N, method="normal"), "p": p,
           "wins_a": int(a_better.sum()), "wins_b": int(b_better.sum())}
    if errors is not None:
        row[f"{test} W/T/L (a)"] = ttest_record(errors, common, a, na, b, nb, higher_is_better, test)
    return row


def wilcoxon_table(cells, methods, ns, higher_is_better: bool = False, comparisons=(), errors=None,
                   test: str = "welch") -> list[dict]:
    """Wilcoxon signed-rank test across datasets for every method pair and every n, plus any
    requested cross-n comparisons (e.g. the GFC paper's GFC at n = 500 against ALC at n = 100)."""
    pairs = [(a, n, b, n) for n in ns for a, b in itertools.combinations(methods, 2)]
    rows = [wilcoxon_row(cells, *pair, higher_is_better, errors, test) for pair in [*pairs, *comparisons]]
    return [r for r in rows if r is not None]


def build(df: pd.DataFrame, alpha: float = 0.05, test: str = "welch"):
    cells, errors, higher = summarise(df, alpha, test)
    reg = registered_datasets()
    ds_order = [d for d in reg if any(k[0] == d for k in cells)]
    ds_order += sorted({k[0] for k in cells} - set(ds_order))
    ns = sorted({k[1] for k in cells})
    methods = sorted({k[2] for k in cells}, key=lambda m: list(df["method"]).index(m))
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


def _fmt_cell(cell: Cell | None, fmt: str) -> tuple[str, str]:
    if cell is None:
        return "–", "–"
    err = f"{cell.mean:.2f} (±{cell.std:.2f})"
    if cell.bold:
        err = {"markdown": f"**{cell.mean:.2f}** (±{cell.std:.2f})",
               "latex": f"\\textbf{{{cell.mean:.2f}}} ($\\pm${cell.std:.2f})",
               "html": f"<b>{cell.mean:.2f}</b> (±{cell.std:.2f})"}.get(fmt, err + " *")
    elif fmt == "latex":
        err = f"{cell.mean:.2f} ($\\pm${cell.std:.2f})"
    if cell.partial:
        err += f" [{cell.folds}/{cell.expected}]"
    return err, hms(cell.walltime)


def bold_rule(test: str, alpha: float, unit: str = "outer folds") -> str:
    """The line under every table that says what bold means and which t-test decides it."""
    how = {"welch": f"Welch's unequal-variance t-test over the {unit}",
           "paired": f"paired t-test on the per-fold differences over the {unit} (paired by "
                     f"{unit[:-1].replace('random ', '')} number; the {unit} are identical for every method)"}[test]
    return f"bold: significantly better than every other method at that n, {how}, p = {alpha:g}"


def render(df: pd.DataFrame, fmt: str = "text", alpha: float = 0.05, comparisons=(), test: str = "welch") -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
    cells, errors, ds_order, ns, methods, sizes, higher = build(df, alpha, test)
    protocols = set(df["protocol"].astype(str)) if "protocol" in df else set()
    # the unit a task is run on: an outer fold of the nested CV, a random train/test split, the holdout
    unit = ("random splits" if protocols and all(p.startswith("splits") for p in protocols)
            else "outer folds")
    rule = bold_rule(test, alpha, unit)
    reg = registered_datasets()
    metrics = set(df.loc[df["status"] == "done", "metric"].dropna())
    metric = ("accuracy (%)" if higher else "test MSE of the standardised output" if metrics == {"mse"}
              else "RMSE × 100 (outputs scaled to range one)")
    if fmt == "csv":
        rows = [{"dataset": d, "m": int(sizes.get(d, 0)) or (reg[d].m if d in reg else None),
                 "d": reg[d].d if d in reg else None, "n_features": n, "method": meth,
                 "error_mean": c.mean, "error_std": c.std, "walltime_s": c.walltime, "folds": c.folds,
                 "bold": c.bold, "bold_test": f"{test} p={alpha:g}"}   # a line would break the CSV
                for d in ds_order for n in ns for meth in methods if (c := cells.get((d, n, meth)))]
        return pd.DataFrame(rows).to_csv(index=False)
    score = "accuracy" if higher else "error"          # what the table's numbers are
    header = ["dataset", "m", "d"]
    for n in ns:
        for meth in methods:
            header += [f"n={n} {meth} {score}", f"n={n} {meth} walltime"]
    body = []
    for d in ds_order:
        row = [d, int(sizes.get(d, 0)) or (reg[d].m if d in reg else ""), reg[d].d if d in reg else ""]
        for n in ns:
            for meth in methods:
                row += list(_fmt_cell(cells.get((d, n, meth)), fmt))
        body.append(row)
    tests = wilcoxon_table(cells, methods, ns, higher, comparisons, errors, test)
    one = unit[:-1].replace("random ", "")
    lead = "Accuracy (%)" if higher else f"Error: {metric}"
    caption = (f"{lead}, mean (± std) over {unit}; walltime: mean time to "
               f"cross-validate one {one} (hh:mm:ss).")
    if any(c.partial for c in cells.values()):
        caption += (f" [k/K]: only k of the K {unit} have finished (a run in progress); such a cell "
                    "is left out of the Wilcoxon tests.")
    as_sign = sorted(set(df.loc[df["task"].astype(str).str.contains("sign", na=False), "method"]))
    if as_sign:
        caption += (f" On classification data, {', '.join(as_sign)} (regression methods) are fitted by "
                    "ridge/least squares on ±1 labels and predict the sign.")
    if fmt == "latex":
        return _latex(header, body, ns, methods, tests, caption, score, rule, test)
    if fmt == "html":
        return _html(header, body, tests, caption, rule)
    tablefmt = "github" if fmt == "markdown" else "simple"
    rule = "* = " + rule if fmt == "text" else rule[0].upper() + rule[1:]
    out = [caption, "", tabulate(body, headers=header, tablefmt=tablefmt, disable_numparse=True), "", rule + "."]
    if tests:
        out += ["", "Wilcoxon signed-rank test across datasets (T = min(W+, W−); reject equality at 95 % "
                "when T ≤ T_crit; T_crit_normal is the normal approximation the GFC paper quotes):", "",
                tabulate(tests, headers="keys", tablefmt=tablefmt, floatfmt=".4g")]
    times = timing_table(df, ds_order, ns, methods)
    if times:
        out += ["", f"Time per {one} (median seconds; t_pp = feature pre-processing of data-dependent "
                "methods, part of t_fit):", "", tabulate(times, headers="keys", tablefmt=tablefmt, floatfmt=".3g")]
    return "\n".join(out) + "\n"


def _tex(s) -> str:
    return str(s).replace("_", r"\_").replace("%", r"\%").replace("&", r"\&").replace("#", r"\#")


def _latex(header, body, ns, methods, tests, caption, score, rule, test) -> str:
    k = len(methods)
    cols = "lrr" + "".join(("rr" * k) for _ in ns)
    lines = [r"\begin{table}[t]", r"\centering", r"\small", f"\\caption{{{_tex(caption)}}}",
             f"\\begin{{tabular}}{{{cols}}}", r"\toprule"]
    lines.append(" & & " + " & ".join(f"\\multicolumn{{{2 * k}}}{{c}}{{$n = {n}$}}" for n in ns) + r" \\")
    rules, start = [], 4
    for _ in ns:
        rules.append(f"\\cmidrule(lr){{{start}-{start + 2 * k - 1}}}")
        start += 2 * k
    lines.append(" ".join(rules))
    lines.append(" & & " + " & ".join(f"\\multicolumn{{2}}{{c}}{{{_tex(m.upper())}}}" for _ in ns for m in methods) + r" \\")
    lines.append("Dataset & $m$ & $d$ & " + " & ".join([f"{score.capitalize()} & Walltime"] * (k * len(ns))) + r" \\")
    lines.append(r"\midrule")
    for row in body:
        cells = [_tex(row[0]), str(row[1]), str(row[2])] + [c.replace(" : ", ":") for c in row[3:]]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", "", f"{{\\footnotesize {_tex(rule[0].upper() + rule[1:])}.}}",
              r"\end{table}"]
    if tests:
        lines += ["", r"\begin{table}[t]", r"\centering", r"\small",
                  r"\caption{Wilcoxon signed-rank test across datasets ($T = \min(W^+, W^-)$; "
                  r"significant at 95\,\% when $T \le T_{\mathrm{crit}}$).}",
                  r"\begin{tabular}{rlrrrrrc}", r"\toprule",
                  r"$n$ & Pair & Datasets & $T$ & $T_{\mathrm{crit}}$ & $T_{\mathrm{crit}}^{\mathrm{normal}}$ & $p$ "
                  f"& {test.capitalize()} W/T/L \\\\",
                  r"\midrule"]
        for t in tests:
            lines.append(f"{t['n']} & {_tex(t['pair'])} & {t['datasets']} & {t['T']:g} & "
                         f"{t['T_crit_95'] if t['T_crit_95'] is not None else '--'} & "
                         f"{t['T_crit_95_normal']} & {t['p']:.3g} & {t.get(f'{test} W/T/L (a)', '--')} \\\\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _html(header, body, tests, caption, rule) -> str:
    def table(head, rows):
        h = "".join(f"<th>{html_lib.escape(str(x))}</th>" for x in head)
        r = "".join("<tr>" + "".join(f"<td>{c if str(c).startswith('<b>') else html_lib.escape(str(c))}</td>"
                                     for c in row) + "</tr>" for row in rows)
        return f"<table>\n<thead><tr>{h}</tr></thead>\n<tbody>{r}</tbody>\n</table>"

    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'><title>rfbench report</title>",
             "<style>table{border-collapse:collapse;font-family:sans-serif;font-size:13px}"
             "td,th{border-bottom:1px solid #ccc;padding:3px 8px;text-align:right}"
             "td:first-child{text-align:left}</style></head><body>",
             f"<p>{html_lib.escape(caption)}</p>", table(header, body),
             f"<p>{html_lib.escape(rule[0].upper() + rule[1:], quote=False)}.</p>"]
    if tests:
        keys = list(tests[0])
        parts += ["<h3>Wilcoxon signed-rank test across datasets</h3>",
                  table(keys, [[(f"{t[k]:.4g}" if isinstance(t[k], float) else t[k]) for k in keys] for t in tests])]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
