"""Compare a results directory with a published table through a spec in bench/.

A spec (YAML) names the published CSV (shipped in rfbench/_data/published, or RFBENCH_PUBLISHED_DIR), which
of its columns hold dataset / n_features / method / mean / std / walltime, the mapping of paper
names to rfbench names, the protocol, and the tolerance:

    pass  when |reproduced − published| ≤ stds × published std   (default stds = 2)
          (optionally also within ``relative`` × published mean, for subsampled CI configurations,
          or, for one holdout split, within ``holdout_ses`` standard errors of the difference of
          two test MSEs on the dataset's n_test points: holdout_ses × 2/√n_test × published mean)
    fail  otherwise;  missing when the results have no finished fold for the cell;
    partial  when fewer folds than the spec's protocol asks (``outer_folds`` or ``repeats``) have
          finished: the difference is shown but not judged yet (a run still in progress);
    not comparable  when the spec says our problem differs from the paper's on that dataset
          (``not_comparable``: dataset → reason): shown, never judged, counted apart.

A published table with one row per dataset and a block of columns per method (the EERF paper's
Tables 3 and 5: ``eerf_error_pct, eerf_error_se, rks_error_pct, …``) is named with
``columns.wide: {paper method: column prefix}``; each method's ``<prefix>_<field>`` columns are then
read as ``<field>`` (``mean: error_pct`` etc.). ``columns.std_is: se`` says that the published spread
is a standard error of the mean (ours is then shown as one too: std over the folds / √folds);
``columns.times: {label: field}`` puts our median times next to the published ones with their ratio
(ours / published): ``t_pp`` = the record's ``preprocess_s`` (a method's data-dependent
pre-processing), ``t_train`` = ``fit_s − preprocess_s`` (the fit without pre-processing and without
the inner-CV search, ``tune_s``), ``t_test`` = ``predict_s``.

Every failing cell of the paper's methods carries a reason (column ``reason``, with
``reason_command`` and ``reason_results``: the command whose output shows it and the committed results
file it reads), printed under the table and on the site's check table:

- computed (:func:`better_than_published`): ours is better than published by more than the tolerance
  (lower error, or higher for a metric where higher is better); the sentence is built from the cell's
  numbers, never typed;
- declared: the spec's ``reasons: {rfbench dataset or "*": {paper method: {text, command, results}}}``
  (``measured: false`` marks a hypothesis no committed measurement backs; printed as unmeasured);
  the text points at what measures it (a variant's row, another spec's check, an analysis script's
  results file), it types no number.

A failing cell with neither is counted and named under the table (``reason_summary``).

Several seeds (``rfbench run --seeds``) are pooled (see :func:`rfbench.reporting.cells.pooled`): the reproduced mean is over
every (seed, fold) error and is judged against the published mean; the ± next to it is the spread
across folds (one seed's std over its folds, mean over seeds), comparable with the published std
over folds, and the spread across seeds is shown apart (``3.92 ± 0.36 (±0.05 seeds)``, column
seeds); a cell is partial until every seed has every fold. Records reach the check through
``store.load_results``, which counts a task found in several directories once and refuses
conflicting copies and mixed protocols.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pandas as pd
from tabulate import tabulate

from rfbench.errors import UsageError
from rfbench.experiments.spec import Spec, published_path
from rfbench.registry import Registry
from rfbench.reporting import cells
from rfbench.reporting.published import published_dir, read_published


def published_table(spec: Spec) -> pd.DataFrame:
    """The spec's published table (as strings), restricted by its ``filters``; a wide table
    (``columns.wide``) as one row per (dataset, method)."""
    pub = read_published(published_path(spec))
    for col, value in spec.filters.items():
        pub = pub[pub[col].astype(str) == str(value)]
    wide = spec.columns.wide
    if wide:
        pub = melt_wide(pub, wide)
    return pub


def melt_wide(pub: pd.DataFrame, wide: dict) -> pd.DataFrame:
    """One row per dataset with ``<prefix>_<field>`` columns per method → one row per (dataset,
    method): the columns shared by every method, the method's fields without their prefix, and
    ``method`` = the paper's method name."""
    if not isinstance(wide, dict) or not wide:
        raise UsageError("columns.wide must map the paper's methods to their column prefixes, e.g. {EERF: eerf}")
    prefixes = tuple(f"{p}_" for p in wide.values())
    shared = [c for c in pub.columns if not c.startswith(prefixes)]
    parts = []
    for method, prefix in wide.items():
        own = {c: c[len(prefix) + 1:] for c in pub.columns if c.startswith(f"{prefix}_")}
        if not own:
            raise UsageError(f"columns.wide: no published column starts with '{prefix}_' (method {method})")
        parts.append(pub[shared].join(pub[list(own)].rename(columns=own)).assign(method=method))
    return pd.concat(parts, ignore_index=True)


def method_column(spec: Spec) -> str:
    """The published column of the paper's method names (``method`` in a melted wide table)."""
    return spec.columns.method


def finished_results(spec: Spec, results: pd.DataFrame) -> pd.DataFrame:
    """The finished tasks of the spec's protocol."""
    done = results[results["status"] == "done"]
    if spec.protocol_key:
        done = done[done["protocol"].astype(str) == spec.protocol_key]
    return done


def expected_folds(spec: Spec) -> int:
    """Folds of a complete cell under the spec's protocol (0: the spec does not say)."""
    return spec.protocol.n_outer if spec.protocol else 0


def holdout_se(dataset: str, registry: Registry) -> float:
    """Relative standard error of the difference of two test MSEs (ours, the paper's) on independent
    test sets of the dataset's holdout.test points: an MSE on n points with Gaussian residuals has
    relative std √(2/n) (the variance of a squared Gaussian is 2σ⁴), the difference of two √2 that."""
    holdout = registry.dataset(dataset).holdout
    if holdout is None:
        raise UsageError(f"tolerance.holdout_ses needs a holdout split, and dataset {dataset} has none "
                         "(datasets.yaml holdout: {train, test})")
    return 2.0 / np.sqrt(holdout[1])


def tolerance(spec: Spec, dataset: str, published_mean: float, published_std: float,
              registry: Registry) -> float:
    """The largest |reproduced − published| that passes (the loosest of the spec's criteria); the
    dataset's holdout sizes are those of ``registry``."""
    t = spec.tolerance
    tol = t.stds * published_std
    if t.relative is not None:
        tol = max(tol, float(t.relative) * abs(published_mean))
    if t.holdout_ses is not None:
        tol = max(tol, t.holdout_ses * holdout_se(dataset, registry) * abs(published_mean))
    return tol


def tolerance_text(spec: Spec) -> str:
    """The pass criterion in words (the check header, the README summary)."""
    t = spec.tolerance
    parts = [f"{t.stds:g} published std"] if t.stds or not (t.relative or t.holdout_ses) else []
    if t.relative:
        parts.append(f"{t.relative:.0%} of the published mean")
    if t.holdout_ses:
        parts.append(f"{t.holdout_ses:g} standard errors of the difference of two test MSEs on n_test points "
                     "(2/√n_test of the published mean each; per cell, column tolerance)")
    return "|Δ| ≤ " + " or ≤ ".join(parts)


def _cell(done: pd.DataFrame, ds: str, meth: str, n) -> pd.DataFrame:
    sel = done[(done["dataset"] == ds) & (done["method"] == meth)]
    return sel if n is None else sel[sel["n_features"].astype(int) == n]


TIME_FIELDS = ("t_pp", "t_train", "t_test")


def _times(sel: pd.DataFrame) -> dict:
    """Our median times of a cell: t_pp (preprocess_s), t_train (fit_s − preprocess_s), t_test
    (predict_s); a record without preprocess_s has none (0)."""
    pre = pd.to_numeric(sel.get("preprocess_s"), errors="coerce").fillna(0.0) if "preprocess_s" in sel \
        else pd.Series(0.0, index=sel.index)
    fit = pd.to_numeric(sel["fit_s"], errors="coerce")
    return {"t_pp": float(pre.median()), "t_train": float((fit - pre).median()),
            "t_test": float(pd.to_numeric(sel["predict_s"], errors="coerce").median())}


def _judge(spec: Spec, sel: pd.DataFrame, row: dict, pm: float, ps: float, n_folds: int, registry: Registry) -> dict:
    """One published cell against the records ``sel`` of one method: the check table's row."""
    ds, row = row["dataset"], dict(row)
    if sel.empty:
        return row | {"reproduced": "", "folds": 0, "diff_stds": np.nan, "status": "missing"}
    e = sel["error"].astype(float).to_numpy()
    pool = cells.pooled(sel["error"], cells.seeds_of(sel))      # one seed: mean and std over the folds, as before
    rm, rs = pool["mean"], pool["fold_std"]
    if spec.columns.std_is == "se":       # the published spread is a standard error: ours too
        rs = rs / np.sqrt(pool["min_folds"]) if pool["min_folds"] > 0 else rs
    tol = row["tolerance"]
    row |= {"reproduced": f"{rm:.4g} ± {rs:.2f}" if e.size > 1 else f"{rm:.4g}", "folds": int(e.size),
            "diff_stds": (rm - pm) / ps if ps > 0 else np.nan,
            "diff_se": (rm - pm) / (holdout_se(ds, registry) * abs(pm)) if spec.tolerance.holdout_ses and pm else np.nan,
            "walltime_s": float(sel["total_s"].astype(float).median()),
            "status": "pass" if abs(rm - pm) <= tol else "fail",
            "reproduced_mean": rm, "published_mean": pm,
            "better": better_than_published(rm, pm, tol, spec.higher_is_better)}
    if pool["seeds"] > 1:      # the std next to the published one is across folds; seeds apart
        row["reproduced"] += f" (±{pool['seed_std']:.2f} seeds)"
        row["seeds"] = pool["seeds"]
    if pool["min_folds"] < n_folds:
        row["status"] = "partial"
    if ds in spec.not_comparable:     # shown, never judged
        row |= {"status": "not comparable", "reason": spec.not_comparable[ds]}
    if "published_walltime_s" in row and row["walltime_s"] > 0:
        row["speedup"] = row["published_walltime_s"] / row["walltime_s"]
    ours = _times(sel) if any(f"{t}_published_s" in row for t in TIME_FIELDS) else {}
    for t in TIME_FIELDS:
        if f"{t}_published_s" in row:
            row[f"{t}_s"] = ours[t]
    return row


def better_than_published(reproduced: float, published: float, tol: float, higher_is_better: bool = False) -> bool:
    """Whether ours beats the published mean by more than the tolerance: a cell that fails on the
    better side (a lower error; a higher score where higher is better)."""
    gain = (reproduced - published) if higher_is_better else (published - reproduced)
    return bool(gain > tol)


def check_command(spec: Spec, dataset: str | None = None, method: str | None = None) -> str:
    """The command whose output shows a cell (its row of ``rfbench check``)."""
    return (f"python -m rfbench.cli check bench/{spec.path.name}" if spec.path else f"python -m rfbench.cli check {spec.name}") \
        + (f" --datasets {dataset}" if dataset else "") + (f" --methods {method}" if method else "")


def results_file(spec: Spec) -> str:
    """The spec's committed records as the check reads them (relative to the checkout when inside it)."""
    from rfbench.registry import ROOT

    path = spec.results / "results.csv" if spec.results is not None else None
    if path is None:
        return ""
    try:
        return str(path.resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return str(path)


def _better_text(row: dict) -> str:
    rm, pm, tol = row["reproduced_mean"], row["published_mean"], row["tolerance"]
    return (f"ours is better than published: {rm:.4g} against {pm:.4g}, |Δ| = {abs(rm - pm) / tol:.1f} × the "
            f"tolerance ±{tol:.3g}, on the better side (computed from the cell)")


def _reason_of(spec: Spec, row: dict, paper: str) -> dict:
    """The reason of one failing paper cell: computed when ours is better than published, else the
    spec's (its dataset's, else its "*" entry); empty when there is none."""
    if row.get("better"):
        return {"reason": _better_text(row), "reason_command": check_command(spec, row["dataset"], row["method"]),
                "reason_results": results_file(spec), "reason_measured": True, "reason_kind": "computed"}
    declared = spec.reasons.get(row["dataset"], {}).get(paper) or spec.reasons.get("*", {}).get(paper)
    if declared is None:
        return {}
    return {"reason": declared.text, "reason_command": declared.command, "reason_results": declared.results,
            "reason_measured": declared.measured, "reason_kind": "declared"}


def _runs_on(method: str, dataset: str, registry: Registry) -> bool:
    """Whether the runner runs ``method`` on ``dataset`` (it has an estimator for the dataset's task)."""
    try:
        return registry.method(method).supports(registry.dataset(dataset).task)
    except UsageError:
        return True              # an unknown name: shown (missing) rather than hidden


def compare(spec: Spec, results: pd.DataFrame, registry: Registry) -> pd.DataFrame:
    """One row per published cell of the spec (and its variants) against ``results``; the datasets and
    methods are those of ``registry``."""
    if not spec.published:
        raise UsageError(f"spec {spec.name} tests a claim and has no published table to check against")
    pub = published_table(spec)
    c = spec.columns
    done = finished_results(spec, results)
    n_folds = expected_folds(spec)
    rows = []
    for _, p in pub.iterrows():
        paper_ds, paper_m = p[c.dataset], p[method_column(spec)]
        if paper_ds not in spec.datasets or paper_m not in spec.methods:
            continue
        n = int(p[c.n_features]) if c.n_features else None
        if spec.n_features and n not in spec.n_features:
            continue
        ds = spec.datasets[paper_ds]
        if not p[c.mean] or pd.isna(p[c.mean]):
            continue
        pm = float(p[c.mean])
        ps = float(p[c.std]) if c.std and p[c.std] else 0.0  # some tables print no std
        for meth in spec.method_alternates.get(paper_m, [spec.methods[paper_m]]):   # first with results
            sel = _cell(done, ds, meth, n)
            if not sel.empty:
                break
        else:
            meth = spec.methods[paper_m]
        row = {"dataset": ds, "method": meth, "n": n,
               "published": f"{pm:.4g} ± {ps:.2f}" if c.std else f"{pm:.4g}",
               "tolerance": tolerance(spec, ds, pm, ps, registry)}
        if c.walltime and c.walltime in p and p[c.walltime]:
            row["published_walltime_s"] = float(p[c.walltime])
        for label, field in c.times.items():
            if label not in TIME_FIELDS:
                raise UsageError(f"spec {spec.name}: columns.times keys must be among {', '.join(TIME_FIELDS)}, "
                                 f"got {label!r}")
            if field in p and pd.notna(p[field]) and str(p[field]).strip():
                row[f"{label}_published_s"] = float(p[field])
        judged = _judge(spec, sel, row | {"variant": False}, pm, ps, n_folds, registry)
        rows.append(judged | (_reason_of(spec, judged, paper_m) if judged["status"] == "fail" else {}))
        for variant in spec.variants.get(paper_m, []):
            if not _runs_on(variant, ds, registry):       # e.g. a two-class variant on a multiclass dataset
                continue
            rows.append(_judge(spec, _cell(done, ds, variant, n), row | {"method": variant, "variant": True},
                               pm, ps, n_folds, registry))
        for other in spec.dataset_variants.get(ds, []):      # the same method on another reading of the data
            if _runs_on(meth, other, registry) and (spec.plan is None or spec.plan.runs(meth, other)):
                rows.append(_judge(spec, _cell(done, other, meth, n), row | {"dataset": other, "variant": True},
                                   pm, ps, n_folds, registry))
    if not rows:
        raise UsageError(f"spec {spec.name}: no published cell matches its dataset/method mappings")
    return pd.DataFrame(rows)


def _rank_means(spec: Spec, results: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(published, reproduced) mean per dataset (rows) and rfbench method (columns); reproduced from
    complete cells only."""
    c = spec.columns
    pub = published_table(spec)
    mc = method_column(spec)
    pub = pub[pub[c.dataset].isin(spec.datasets) & pub[mc].isin(spec.methods)].copy()
    pub = pub[pd.to_numeric(pub[c.mean], errors="coerce").notna()]
    pub_means = (pub.assign(dataset=pub[c.dataset].map(spec.datasets), method=pub[mc].map(spec.methods),
                            mean=pub[c.mean].astype(float))
                 .pivot_table(index="dataset", columns="method", values="mean"))
    done = cells.complete_cells(finished_results(spec, results), expected_folds(spec))
    rep_means = done.astype({"error": float}).pivot_table(index="dataset", columns="method", values="error")
    return pub_means, rep_means


def _ranks(spec: Spec, pub_means: pd.DataFrame, rep_means: pd.DataFrame, methods: list) -> pd.DataFrame | None:
    common = [d for d in pub_means.index if d in rep_means.index
              and pub_means.loc[d, methods].notna().all() and rep_means.loc[d, methods].notna().all()]
    if len(methods) < 2 or not common:
        return None
    ascending = not spec.higher_is_better
    p, r = pub_means.loc[common, methods], rep_means.loc[common, methods]
    return pd.DataFrame({"method": methods, "datasets": len(common),
                         "published_mean": p.mean().to_numpy(), "reproduced_mean": r.mean().to_numpy(),
                         "published_avg_rank": p.rank(axis=1, ascending=ascending).mean().to_numpy(),
                         "reproduced_avg_rank": r.rank(axis=1, ascending=ascending).mean().to_numpy()})


def rank_summary(spec: Spec, results: pd.DataFrame) -> pd.DataFrame | None:
    """Average rank and mean score of every reproduced method over the datasets where all of
    them are present in both tables, published next to reproduced. Both rankings are among the
    reproduced methods only (the paper's printed ranks also count methods not run here), rank 1 =
    best, ties share the average rank."""
    if not spec.rank_summary:
        return None
    pub_means, rep_means = _rank_means(spec, results)
    methods = [m for m in spec.methods.values() if m in rep_means.columns and m in pub_means.columns]
    return _ranks(spec, pub_means, rep_means, methods)


def rank_summaries(spec: Spec, results: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(heading, table) of the rank views: every reproduced method over the datasets where all are
    complete (:func:`rank_summary`); when that leaves out some of the paper's datasets (a method
    run on part of them), also the methods complete on all of those, over all of them."""
    if not spec.rank_summary:
        return []
    pub_means, rep_means = _rank_means(spec, results)
    out = []
    full = rank_summary(spec, results)
    if full is not None:
        out.append((f"among these {len(full)} methods", full))
    paper_sets = [d for d in pub_means.index if pub_means.loc[d].notna().all()]
    if full is None or int(full["datasets"].iloc[0]) < len(paper_sets):
        methods = [m for m in spec.methods.values() if m in rep_means.columns and m in pub_means.columns
                   and all(d in rep_means.index and pd.notna(rep_means.loc[d, m]) for d in paper_sets)]
        part = _ranks(spec, pub_means, rep_means, methods)
        if part is not None and (full is None or len(methods) < len(full)):
            out.append((f"among the {len(methods)} methods complete on all {len(paper_sets)} of the paper's "
                        "datasets", part))
    return out


def printed_ranks(spec: Spec) -> pd.DataFrame | None:
    """The paper's printed average ranks and means (spec ``published_summary``) next to the same
    recomputed from its printed cells, among all the paper's methods, over the datasets where every
    one has a cell (ties in the printed, rounded cells share their average rank)."""
    info = spec.published_summary
    if not info:
        return None
    summary = read_published(published_dir() / info.file)
    pub_means, _ = _rank_means(spec, pd.DataFrame(columns=["status", "protocol", "dataset", "method",
                                                           "n_features", "fold", "error"]))
    complete = pub_means.dropna()
    ranks = complete.rank(axis=1, ascending=not spec.higher_is_better).mean()
    rows = []
    for _, row in summary.iterrows():
        m = spec.methods.get(str(row[info.method]))
        if m is None or m not in complete.columns:
            continue
        rows.append({"method": m, "datasets": len(complete),
                     "printed_mean": float(row[info.mean]), "recomputed_mean": float(complete[m].mean()),
                     "printed_avg_rank": float(row[info.rank]), "recomputed_avg_rank": float(ranks[m])})
    return pd.DataFrame(rows) if rows else None


def wilcoxon_summary(spec: Spec, results: pd.DataFrame) -> pd.DataFrame | None:
    """The paper's Wilcoxon signed-rank comparisons across datasets (spec ``wilcoxon``: method a at
    n_a against b at n_b, the paper's T and its number of datasets), one row each: the same test on
    the published means and on ours, both over the same datasets (those whose two cells are complete
    here, published and comparable), with T, N (datasets that are not ties), the exact 5 % critical
    value for that N, and on how many datasets each side is better (``*_wins_a``, ``*_wins_b``; a
    tie, see stats.ties, counts for neither). Columns ``published_*`` are the published means,
    unprefixed ones ours; ``paper_T``/``paper_datasets`` what the paper printed on all its sets."""
    if not spec.wilcoxon:
        return None
    from rfbench.reporting import stats

    c = spec.columns
    pub = published_table(spec)
    mc = method_column(spec)
    pub = pub[pub[c.dataset].isin(spec.datasets) & pub[mc].isin(spec.methods)]
    pub_means = (pub.assign(dataset=pub[c.dataset].map(spec.datasets), method=pub[mc].map(spec.methods),
                            n=pub[c.n_features].astype(int), mean=pd.to_numeric(pub[c.mean], errors="coerce"))
                 .set_index(["dataset", "method", "n"])["mean"].dropna())
    done = cells.complete_cells(finished_results(spec, results), expected_folds(spec))
    rep = done.astype({"error": float, "n_features": int}).groupby(["dataset", "method", "n_features"])["error"].mean()

    def side(means, a, na, b, nb, common, prefix):
        ea, eb = (means.reindex([(d, m, n) for d in common]).to_numpy() for m, n in ((a, na), (b, nb)))
        T, p, N = stats.wilcoxon(ea, eb)
        real = ~stats.ties(ea, eb)
        better_a = (ea > eb) if spec.higher_is_better else (ea < eb)
        return {f"{prefix}T": T, f"{prefix}p": p, f"{prefix}N": N, f"{prefix}T_crit_95": stats.wilcoxon_critical_value(N),
                f"{prefix}wins_a": int((better_a & real).sum()), f"{prefix}wins_b": int((~better_a & real).sum())}

    rows = []
    for cmp in spec.wilcoxon:
        a, na, b, nb = cmp.a, cmp.n_a, cmp.b, cmp.n_b
        common = [d for d in dict.fromkeys(spec.datasets.values()) if d not in spec.not_comparable
                  and all((d, m, n) in idx for idx in (rep.index, pub_means.index) for m, n in ((a, na), (b, nb)))]
        row = {"comparison": f"{a}@{na} vs {b}@{nb}", "a": f"{a}@{na}", "b": f"{b}@{nb}",
               "paper_T": cmp.published_T, "paper_datasets": cmp.published_datasets,
               "datasets": len(common)}
        if len(common) >= 2:
            pub_side = side(pub_means, a, na, b, nb, common, "published_")
            row |= pub_side | {"paper_T_same_datasets": pub_side["published_T"]}
            row |= side(rep, a, na, b, nb, common, "")
            row["T_crit_95_normal"] = stats.wilcoxon_critical_value(row["N"], method="normal")
        rows.append(row)
    return pd.DataFrame(rows)


def _verdict(r, prefix: str) -> tuple[str, str]:
    """('T = 9 (T_crit 10: significant)', 'gfc@500 better on 8 of 11') for one side of a comparison."""
    T, crit, wa, wb = (r[prefix + k] for k in ("T", "T_crit_95", "wins_a", "wins_b"))
    if pd.isna(T):
        return "no test (every dataset a tie)", ""
    sig = (f"T_crit {crit:.0f}: " + ("significant" if T <= crit else "not significant") if pd.notna(crit)
           else f"N = {r[prefix + 'N']:.0f}: too few datasets to be significant")
    better = (f"neither better on more ({wa} vs {wb})" if wa == wb
              else f"{r['a'] if wa > wb else r['b']} better on {max(wa, wb)} of {r['datasets']}")
    return f"T = {T:g} ({sig}),", better


def wilcoxon_lines(summary: pd.DataFrame | None) -> list[str]:
    """Per claim a line naming it, then the published means and ours on the same datasets: T against
    its critical value, and which side is better on more datasets."""
    if summary is None or summary.empty:
        return []
    lines = []
    for _, r in summary.iterrows():
        paper = f" (paper: T = {r['paper_T']} on {r['paper_datasets']} datasets)" if pd.notna(r["paper_T"]) else ""
        if pd.isna(r.get("N", np.nan)):
            lines.append(f"{r['comparison']}{paper}: {r['datasets']} dataset(s) with both cells here, no test")
            continue
        sides = [("published means", *_verdict(r, "published_")), ("ours", *_verdict(r, ""))]
        width = max(len(t) for _, t, _ in sides)
        lines.append(f"{r['comparison']}{paper}, on our {r['datasets']} datasets:")
        lines += [f"    {who:<16} {t:<{width}} {better}".rstrip() for who, t, better in sides]
    return lines


def chosen_summary(spec: Spec, results: pd.DataFrame) -> pd.DataFrame | None:
    """A hyper-parameter the paper reports as selected (spec ``chosen``: its table, dataset and
    value columns, our method and the name of the parameter in the records' ``params``), next to
    the values our runs selected (one per finished fold, most frequent first)."""
    ch = spec.chosen
    if not ch:
        return None
    pub = read_published(published_dir() / ch.published)
    done = finished_results(spec, results)
    done = done[done["method"] == ch.method]
    rows = []
    for _, p in pub.iterrows():
        ds = spec.datasets.get(p[ch.dataset_column])
        if ds is None:
            continue
        values = [json.loads(v).get(ch.param) for v in done.loc[done["dataset"] == ds, "params"].dropna()]
        counts = pd.Series([v for v in values if v is not None], dtype=object).value_counts()
        rows.append({"dataset": ds, f"published_{ch.param}": p[ch.value_column],
                     f"chosen_{ch.param}": ", ".join(f"{v}" + (f" ×{k}" if k > 1 else "")
                                                        for v, k in counts.items()),
                     "folds": len(values)})
    return pd.DataFrame(rows) if rows else None


def render_chosen(summary: pd.DataFrame | None, spec: Spec) -> str:
    if summary is None or summary.empty:
        return ""
    return (f"\nSelected {spec.chosen.param} of {spec.chosen.method}, published next to ours "
            "(per finished fold; ×k = chosen on k folds):\n\n"
            + tabulate(summary, headers="keys", tablefmt="simple", showindex=False, disable_numparse=True) + "\n")


def render_wilcoxon(summary: pd.DataFrame | None) -> str:
    lines = wilcoxon_lines(summary)
    if not lines:
        return ""
    head = ("The paper's Wilcoxon signed-rank claims on the same datasets: those whose two cells are complete "
            "here, published and comparable (T = min(W+, W−); significant at 5 % when T ≤ T_crit, the exact "
            "two-sided value for the N datasets that are not ties; better = the better score, on more datasets):")
    return "\n" + "\n".join(textwrap.wrap(head, 110)) + "\n\n" + "\n".join(lines) + "\n"


def render_ranks(summary: pd.DataFrame | None, among: str = "among these methods only") -> str:
    if summary is None or summary.empty:
        return ""
    return (f"\nAverage rank (1 = best) and mean over the datasets where every method above is present, "
            f"{among}:\n\n" + tabulate(summary, headers="keys", tablefmt="simple",
                                         showindex=False, floatfmt=".2f") + "\n")


def render_rank_views(spec: Spec, results: pd.DataFrame) -> str:
    """Every rank view of :func:`rank_summaries`, then the paper's printed ranks against the ones
    recomputed from its cells (:func:`printed_ranks`) with the spec's note on them."""
    text = "".join(render_ranks(t, among) for among, t in rank_summaries(spec, results))
    printed = printed_ranks(spec)
    if printed is not None:
        text += ("\nThe paper's printed average ranks and means against the same recomputed from its printed "
                 f"cells (all {len(printed)} methods):\n\n"
                 + tabulate(printed, headers="keys", tablefmt="simple", showindex=False, floatfmt=".2f") + "\n")
        note = spec.published_summary.note
        if note:
            text += "\n" + "\n".join(textwrap.wrap(str(note), 110)) + "\n"
    return text


def render_excluded(spec: Spec) -> str:
    """The cells the spec's run leaves out on purpose (run.exclude), one line each."""
    if not spec.plan or not spec.plan.exclude:
        return ""
    lines = [f"  {m} on {d}: {why}" for m, cells in spec.plan.exclude.items() for d, why in cells.items()]
    return "\nNot run (run.exclude):\n" + "\n".join(lines) + "\n"


def _wrap(label: str, text: str) -> list[str]:
    return textwrap.wrap(f"{label}: {text}", width=110, subsequent_indent="    ", break_on_hyphens=False)


STATUSES = ("pass", "fail", "not comparable", "partial", "missing")


def paper_cells(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the paper's methods: what pass/fail counts and exit codes are about (the rows of
    a spec's ``variants`` are shown next to them, never counted)."""
    return table[~table["variant"].astype(bool)] if "variant" in table else table


def summary_line(table: pd.DataFrame) -> str:
    """'5 pass, 2 fail, 4 not comparable, 0 missing' (partial and not comparable only when present)."""
    counts = paper_cells(table)["status"].value_counts()
    return ", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES
                     if s not in ("partial", "not comparable") or counts.get(s, 0))


def _time_columns(shown: pd.DataFrame) -> pd.DataFrame:
    """Our time next to the published one and their ratio, one column per time: '0.21 / 0.19 = 1.1×'."""
    for t in TIME_FIELDS:
        if f"{t}_published_s" not in shown:
            continue
        ours, pub = shown.pop(f"{t}_s") if f"{t}_s" in shown else None, shown.pop(f"{t}_published_s")
        cells = []
        for o, p in zip(ours if ours is not None else [np.nan] * len(pub), pub, strict=True):
            if pd.isna(p) or pd.isna(o):
                cells.append("" if pd.isna(p) else f"– / {p:.2f}")
            else:
                cells.append(f"{o:.2f} / {p:.2f} = {o / p:.2g}×" if p > 0 else f"{o:.2f} / {p:.2f}")
        shown[f"{t} (ours / paper, s)"] = cells
    return shown


def failing_without_reason(table: pd.DataFrame) -> pd.DataFrame:
    """The failing cells of the paper's methods that carry no reason (computed or declared)."""
    paper = paper_cells(table)
    fail = paper[paper["status"] == "fail"]
    if "reason_command" not in fail:
        return fail
    return fail[fail["reason_command"].isna() | (fail["reason_command"].astype(str) == "")]


def reason_summary(table: pd.DataFrame) -> str:
    """'reasons: 22 of 22 failing cells (20 computed: better than published; 2 declared, 1 of them unmeasured)'."""
    paper = paper_cells(table)
    fail = paper[paper["status"] == "fail"]
    if fail.empty:
        return ""
    kind = fail["reason_kind"] if "reason_kind" in fail else pd.Series("", index=fail.index)
    computed, declared = int((kind == "computed").sum()), int((kind == "declared").sum())
    unmeasured = (int(((kind == "declared") & (fail["reason_measured"] == False)).sum())  # noqa: E712
                  if "reason_measured" in fail else 0)     # no cell has a reason: no reason columns
    return (f"reasons: {computed + declared} of {len(fail)} failing cells ({computed} computed: better than "
            f"published; {declared} declared by the spec, {unmeasured} of them unmeasured)")


def _reason_lines(table: pd.DataFrame, spec: Spec) -> list[str]:
    """The failing cells' reasons, one paragraph per reason (the cells sharing it named together), its
    command and results file under it; then the failing cells without one, and the count."""
    paper_of = {m: p for p, names in spec.method_alternates.items() for m in names}
    groups: dict[tuple, list[str]] = {}
    for r in paper_cells(table).to_dict("records"):
        if r["status"] != "fail" or not isinstance(r.get("reason_command"), str) or not r["reason_command"]:
            continue
        paper = paper_of.get(r["method"], r["method"])
        paper = r["method"] if str(paper).isdigit() else paper      # a bare number (Q = 1) says less than the name
        cell = f"{r['dataset']} {paper}" + ("" if r["n"] is None or pd.isna(r["n"]) else f" (n = {r['n']})")
        groups.setdefault((r["reason"], r["reason_command"], r["reason_results"], bool(r["reason_measured"])),
                          []).append(cell)
    lines = []
    for (text, command, results, measured), names in groups.items():
        lines += _wrap("  " + ", ".join(names), ("" if measured else "unmeasured: ") + text)
        lines += [f"      shown by: {command}", f"      results: {results}"]
    missing = failing_without_reason(table)
    if not lines and missing.empty:
        return []
    out = ["", "why the failing cells miss (computed: ours better than published; else the spec's reasons, "
           "each with the command that shows it and the committed results it reads):", *lines]
    if len(missing):
        out += _wrap("  no reason yet", ", ".join(f"{r.dataset} {r.method} (n = {r.n})" for r in missing.itertuples()))
    return [*out, "", reason_summary(table)]


REASON_COLUMNS = ("reason_command", "reason_results", "reason_measured", "reason_kind", "better", "reproduced_mean",
                  "published_mean")   # the table's working columns, not drawn


def render(table: pd.DataFrame, spec: Spec) -> str:
    shown = _time_columns(table.drop(columns=["reason", "variant", *REASON_COLUMNS], errors="ignore"))
    fmt = {"diff_stds": "{:+.2f}", "diff_se": "{:+.2f}", "walltime_s": "{:.1f}", "published_walltime_s": "{:.1f}",
           "speedup": "{:.0f}x", "seeds": "{:.0f}"}     # speedup = published / reproduced walltime per outer fold
    for col, f in fmt.items():
        if col in shown:
            shown[col] = shown[col].map(lambda v, f=f: "" if pd.isna(v) else f.format(v))
    # the tolerance is worth a column only where it is not a fixed number of published stds
    if spec.tolerance.relative or spec.tolerance.holdout_ses:
        pm = pd.to_numeric(shown["published"].str.split(" ").str[0], errors="coerce")
        shown["tolerance"] = [f"±{t:.3g} ({t / abs(m):.0%})" if m else f"±{t:.3g}"
                              for t, m in zip(table["tolerance"], pm, strict=True)]
        cols = [c for c in shown if c != "tolerance"]      # the tolerance next to the difference
        cols.insert(cols.index("diff_se" if "diff_se" in cols else "published") + 1, "tolerance")
        shown = shown[cols]
    else:
        shown = shown.drop(columns=["tolerance"])
    shown = shown.loc[:, [c for c in shown if not (shown[c].isna() | (shown[c].astype(str) == "")).all()]]
    head = [f"check {spec.name} against {spec.published}; walltime = median seconds per outer fold; "
            "speedup = published / reproduced walltime",
            *_wrap("tolerance", tolerance_text(spec) + (f". Why: {spec.tolerance.why}" if spec.tolerance.why else "")),
            *_wrap("test", f"{spec.test.name} (the t-test that bolds cells in the report)"
                   + (f". Why: {spec.test.why}" if spec.test.why else "")),
            *(_wrap("variants", "; ".join(f"{', '.join(v)} checked against {m}'s cells too, shown but not counted"
                                          for m, v in spec.variants.items())) if spec.variants else []),
            *(_wrap("dataset variants", "; ".join(f"{', '.join(v)} (another reading of {d}) checked against {d}'s "
                                                  "cells too, shown but not counted"
                                                  for d, v in spec.dataset_variants.items()))
              if spec.dataset_variants else [])]
    if "diff_se" in shown:
        head += ["diff_se = (reproduced − published) / standard error of the difference of two test MSEs"]
    if spec.columns.std_is == "se":
        head += ["± = standard error of the mean over the repeats (ours: std / √repeats; published: the paper's "
                 "standard errors); diff_stds = (reproduced − published) / published standard error"]
    if any(f"{t}_published_s" in table for t in TIME_FIELDS):
        head += ["times: our median over the repeats / the paper's, seconds, and their ratio (ours / paper); "
                 "t_pp = pre-processing (preprocess_s), t_train = fit_s − preprocess_s (the final fit, without the "
                 "inner-CV search), t_test = predict_s"]
    out = [*head, "", tabulate(shown, headers="keys", tablefmt="simple", showindex=False, disable_numparse=True)]
    nc = table[table["status"] == "not comparable"].drop_duplicates("dataset")
    if len(nc):
        out += ["", "not comparable (our problem differs from the paper's; shown, not judged):",
                *(f"  {r.dataset}: {r.reason}" for r in nc.itertuples())]
    out += _reason_lines(table, spec)
    return "\n".join([*out, "", summary_line(table)]) + "\n"
