"""Compare a results directory with a published table through a spec in bench/.

A spec (YAML) names the published CSV (in ../shared/published or RFBENCH_PUBLISHED_DIR), which
of its columns hold dataset / n_features / method / mean / std / walltime, the mapping of paper
names to rfbench names, the protocol, and the tolerance:

    pass  when |reproduced − published| ≤ stds × published std   (default stds = 2)
          (optionally also within ``relative`` × published mean, for subsampled CI configurations)
    fail  otherwise;  missing when the results have no finished fold for the cell;
    partial  when fewer folds than the spec's protocol asks (``outer_folds`` or ``repeats``) have
          finished: the difference is shown but not judged yet (a run still in progress).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from tabulate import tabulate

from rfbench.errors import UsageError
from rfbench.spec import Spec, load_spec, published_dir, published_path, read_published  # noqa: F401


def published_table(spec: Spec) -> pd.DataFrame:
    """The spec's published table (as strings), restricted by its ``filters``."""
    pub = read_published(published_path(spec))
    for col, value in spec.filters.items():
        pub = pub[pub[col].astype(str) == str(value)]
    return pub


def finished_results(spec: Spec, results: pd.DataFrame) -> pd.DataFrame:
    """The finished tasks of the spec's protocol."""
    done = results[results["status"] == "done"]
    if spec.protocol_key:
        done = done[done["protocol"].astype(str) == spec.protocol_key]
    elif "protocol_contains" in spec.protocol:
        done = done[done["protocol"].astype(str).str.contains(spec.protocol["protocol_contains"], regex=False)]
    return done


def expected_folds(spec: Spec) -> int:
    """Folds of a complete cell under the spec's protocol (0: the spec does not say)."""
    if spec.plan:
        return spec.plan.protocol.n_outer
    return int(spec.protocol.get("outer_folds") or spec.protocol.get("repeats") or 0)


def complete_cells(spec: Spec, done: pd.DataFrame) -> pd.DataFrame:
    """The finished folds of complete (dataset, method, n) cells only: the mean of a run still in
    progress is not the cell's result, so the summaries across datasets leave it out."""
    size = done.groupby(["dataset", "method", "n_features"])["error"].transform("size")
    return done[size >= expected_folds(spec)]


def compare(spec: Spec, results: pd.DataFrame) -> pd.DataFrame:
    pub = published_table(spec)
    c = spec.columns
    done = finished_results(spec, results)
    n_folds = expected_folds(spec)
    baseline = {}
    if spec.baseline_method:
        sel_b = pub[pub[c["method"]] == spec.baseline_method]
        baseline = {r[c["dataset"]]: float(r[c["mean"]]) for _, r in sel_b.iterrows() if r[c["mean"]]}
    rows = []
    for _, p in pub.iterrows():
        paper_ds, paper_m = p[c["dataset"]], p[c["method"]]
        if paper_ds not in spec.datasets or paper_m not in spec.methods:
            continue
        n = int(p[c["n_features"]]) if "n_features" in c else None
        if spec.n_features and n not in spec.n_features:
            continue
        ds = spec.datasets[paper_ds]
        if not p[c["mean"]] or pd.isna(p[c["mean"]]):
            continue
        pm = float(p[c["mean"]])
        ps = float(p[c["std"]]) if "std" in c and p[c["std"]] else 0.0  # some tables print no std
        for meth in spec.method_alternates.get(paper_m, [spec.methods[paper_m]]):   # first with results
            sel = done[(done["dataset"] == ds) & (done["method"] == meth)]
            if n is not None:
                sel = sel[sel["n_features"].astype(int) == n]
            if not sel.empty:
                break
        else:
            meth = spec.methods[paper_m]
        row = {"dataset": ds, "method": meth, "n": n,
               "published": f"{pm:.4g} ± {ps:.2f}" if "std" in c else f"{pm:.4g}"}
        if "walltime" in c and c["walltime"] in p and p[c["walltime"]]:
            row["published_walltime_s"] = float(p[c["walltime"]])
        if sel.empty:
            rows.append(row | {"reproduced": "", "folds": 0, "diff_stds": np.nan, "status": "missing"})
            continue
        e = sel["error"].astype(float).to_numpy()
        rm, rs = float(e.mean()), float(e.std(ddof=1)) if e.size > 1 else 0.0
        diff = (rm - pm) / ps if ps > 0 else (0.0 if rm == pm else np.inf)
        ok = abs(rm - pm) <= spec.stds * ps
        if spec.relative is not None:
            ok = ok or abs(rm - pm) <= float(spec.relative) * abs(pm)
        if paper_ds in baseline:
            b = baseline[paper_ds]
            ok = ok or (rm >= b if spec.higher_is_better else rm <= b)
        if ps == 0:
            diff = np.nan
        row |= {"reproduced": f"{rm:.4g} ± {rs:.2f}" if e.size > 1 else f"{rm:.4g}", "folds": int(e.size),
                "diff_stds": diff,
                "walltime_s": float(sel["total_s"].astype(float).median()),
                "status": "pass" if ok else "fail"}
        if e.size < n_folds:
            row["status"] = "partial"
        if "published_walltime_s" in row and row["walltime_s"] > 0:
            row["speedup"] = row["published_walltime_s"] / row["walltime_s"]
        rows.append(row)
    if not rows:
        raise UsageError(f"spec {spec.name}: no published cell matches its dataset/method mappings")
    return pd.DataFrame(rows)


def rank_summary(spec: Spec, results: pd.DataFrame) -> pd.DataFrame | None:
    """Average rank and mean score of every reproduced method over the datasets where all of
    them are present in both tables, published next to reproduced. Both rankings are among the
    reproduced methods only (the paper's printed ranks also count methods not run here), rank 1 =
    best, ties share the average rank."""
    if not spec.rank_summary:
        return None
    c = spec.columns
    pub = published_table(spec)
    pub = pub[pub[c["dataset"]].isin(spec.datasets) & pub[c["method"]].isin(spec.methods)].copy()
    pub = pub[pd.to_numeric(pub[c["mean"]], errors="coerce").notna()]
    pub_means = (pub.assign(dataset=pub[c["dataset"]].map(spec.datasets), method=pub[c["method"]].map(spec.methods),
                            mean=pub[c["mean"]].astype(float))
                 .pivot_table(index="dataset", columns="method", values="mean"))
    done = complete_cells(spec, finished_results(spec, results))
    rep_means = done.astype({"error": float}).pivot_table(index="dataset", columns="method", values="error")
    methods = [m for m in spec.methods.values() if m in rep_means.columns and m in pub_means.columns]
    if len(methods) < 2:
        return None
    common = [d for d in pub_means.index if d in rep_means.index
              and pub_means.loc[d, methods].notna().all() and rep_means.loc[d, methods].notna().all()]
    if not common:
        return None
    ascending = not spec.higher_is_better
    p, r = pub_means.loc[common, methods], rep_means.loc[common, methods]
    return pd.DataFrame({"method": methods, "datasets": len(common),
                         "published_mean": p.mean().to_numpy(), "reproduced_mean": r.mean().to_numpy(),
                         "published_avg_rank": p.rank(axis=1, ascending=ascending).mean().to_numpy(),
                         "reproduced_avg_rank": r.rank(axis=1, ascending=ascending).mean().to_numpy()})


def wilcoxon_summary(spec: Spec, results: pd.DataFrame) -> pd.DataFrame | None:
    """The paper's Wilcoxon signed-rank comparisons across datasets (spec ``wilcoxon``: method a at
    n_a against b at n_b, the paper's T and its number of datasets), next to the same test on the
    reproduced means and on the published means of the datasets reproduced here, with the exact
    and normal-approximation critical values for that number of datasets."""
    if not spec.wilcoxon:
        return None
    from rfbench import stats

    c = spec.columns
    pub = published_table(spec)
    pub = pub[pub[c["dataset"]].isin(spec.datasets) & pub[c["method"]].isin(spec.methods)]
    pub_means = (pub.assign(dataset=pub[c["dataset"]].map(spec.datasets), method=pub[c["method"]].map(spec.methods),
                            n=pub[c["n_features"]].astype(int), mean=pd.to_numeric(pub[c["mean"]], errors="coerce"))
                 .set_index(["dataset", "method", "n"])["mean"])
    done = complete_cells(spec, finished_results(spec, results))
    rep = done.astype({"error": float, "n_features": int}).groupby(["dataset", "method", "n_features"])["error"].mean()
    rows = []
    for cmp in spec.wilcoxon:
        a, na, b, nb = cmp["a"], int(cmp["n_a"]), cmp["b"], int(cmp["n_b"])
        common = [d for d in spec.datasets.values() if (d, a, na) in rep.index and (d, b, nb) in rep.index]
        row = {"comparison": f"{a}@{na} vs {b}@{nb}", "paper_T": cmp.get("published_T"),
               "paper_datasets": cmp.get("published_datasets"), "datasets": len(common)}
        if len(common) >= 2:
            T, p, N = stats.wilcoxon([rep[(d, a, na)] for d in common], [rep[(d, b, nb)] for d in common])
            T_pub, _, _ = stats.wilcoxon([pub_means[(d, a, na)] for d in common],
                                         [pub_means[(d, b, nb)] for d in common])
            row |= {"T": T, "p": p, "T_crit_95": stats.wilcoxon_critical_value(N),
                    "T_crit_95_normal": stats.wilcoxon_critical_value(N, method="normal"),
                    "paper_T_same_datasets": T_pub,
                    "wins_a": int(sum(rep[(d, a, na)] < rep[(d, b, nb)] for d in common))}
        rows.append(row)
    return pd.DataFrame(rows)


def chosen_summary(spec: Spec, results: pd.DataFrame) -> pd.DataFrame | None:
    """A hyper-parameter the paper reports as selected (spec ``chosen``: its table, dataset and
    value columns, our method and the name of the parameter in the records' ``params``), next to
    the values our runs selected (one per finished fold, most frequent first)."""
    ch = spec.chosen
    if not ch:
        return None
    pub = read_published(published_dir() / ch["published"])
    done = finished_results(spec, results)
    done = done[done["method"] == ch["method"]]
    rows = []
    for _, p in pub.iterrows():
        ds = spec.datasets.get(p[ch["dataset_column"]])
        if ds is None:
            continue
        values = [json.loads(v).get(ch["param"]) for v in done.loc[done["dataset"] == ds, "params"].dropna()]
        counts = pd.Series([v for v in values if v is not None], dtype=object).value_counts()
        rows.append({"dataset": ds, f"published_{ch['param']}": p[ch["value_column"]],
                     f"chosen_{ch['param']}": ", ".join(f"{v}" + (f" ×{k}" if k > 1 else "")
                                                        for v, k in counts.items()),
                     "folds": len(values)})
    return pd.DataFrame(rows) if rows else None


def render_chosen(summary: pd.DataFrame | None, spec: Spec) -> str:
    if summary is None or summary.empty:
        return ""
    return (f"\nSelected {spec.chosen['param']} of {spec.chosen['method']}, published next to ours "
            "(per finished fold; ×k = chosen on k folds):\n\n"
            + tabulate(summary, headers="keys", tablefmt="simple", showindex=False, disable_numparse=True) + "\n")


def render_wilcoxon(summary: pd.DataFrame | None) -> str:
    if summary is None or summary.empty:
        return ""
    return ("\nWilcoxon signed-rank tests of the paper across datasets (T = min(W+, W−); significant at "
            "95 % when T ≤ T_crit; datasets = those whose two cells are complete; paper_T_same_datasets = "
            "the test on the published means of those datasets):\n\n"
            + tabulate(summary, headers="keys", tablefmt="simple", showindex=False, floatfmt=".4g") + "\n")


def render_ranks(summary: pd.DataFrame | None) -> str:
    if summary is None or summary.empty:
        return ""
    return ("\nAverage rank (1 = best) and mean over the datasets where every method above is present, "
            "among these methods only:\n\n" + tabulate(summary, headers="keys", tablefmt="simple",
                                                          showindex=False, floatfmt=".2f") + "\n")


def render(table: pd.DataFrame, spec: Spec) -> str:
    shown = table.copy()
    shown["diff_stds"] = shown["diff_stds"].map(lambda v: "" if pd.isna(v) else f"{v:+.2f}")
    for col in ("walltime_s", "published_walltime_s"):
        if col in shown:
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.1f}")
    if "speedup" in shown:   # published / reproduced walltime per outer fold
        shown["speedup"] = shown["speedup"].map(lambda v: "" if pd.isna(v) else f"{v:.0f}x")
    counts = table["status"].value_counts().to_dict()
    tol = f"|Δ| ≤ {spec.stds:g} published std" + (f" or ≤ {spec.relative:.0%} of the mean" if spec.relative else "")
    if spec.baseline_method:
        tol += f" or at least as good as the paper's {spec.baseline_method}"
    head = (f"check {spec.name} against {spec.published} ({tol}); walltime = median seconds per outer fold; "
            "speedup = published / reproduced walltime")
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("pass", "fail", "partial", "missing")
                        if s != "partial" or counts.get(s))
    return "\n".join([head, "", tabulate(shown, headers="keys", tablefmt="simple", showindex=False,
                                         disable_numparse=True), "", summary]) + "\n"
