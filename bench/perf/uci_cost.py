"""The cost of the UCI fixed-split suite (bench/uci-splits.yaml), from its own records.

* **Growth with rows**: the median CPU seconds of one task (one split: inner CV, refit, predict; the
  estimator's measure, rfbench.execution.estimate.task_cost: the wall time of the 2-core machine
  counted what else ran beside the suite) per set and method, for the sets with finished tasks, sets in row order (23 → 63 608), and per method the
  exponent a of t ∝ rows^a fitted in logs over those sets.
* **Projection**: the spec's whole run (`rfbench reproduce uci-splits --dry-run`: runner.dry_run, the
  estimator of `rfbench status`) in core-hours per method, split into what is done, what is estimated
  from the same cell's finished tasks and what is extrapolated from other sets; wall time on 2 and on
  16 cores is the core-hours over the cores (the runner keeps every worker busy until the tail).

Writes results/uci-cost.json and docs/uci-cost.md (the table docs/uci-splits.md links).

    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/uci_cost.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def growth(done: pd.DataFrame, registry) -> tuple[pd.DataFrame, dict]:
    """(median task seconds (task_cost): sets × (method, n), {method@n: fitted exponent of rows or None})."""
    from rfbench.execution.estimate import task_cost

    med = (done.assign(cost_s=task_cost(done)).groupby(["dataset", "method", "n_features"])["cost_s"].median()
           .unstack(["method", "n_features"]))
    med = med.loc[sorted(med.index, key=lambda d: registry.dataset(d).m)]
    exponents = {}
    for (method, n), col in med.items():
        col = col.dropna()
        rows = np.array([registry.dataset(d).m for d in col.index], float)
        ok = len(col) >= 3 and np.ptp(np.log(rows)) > 1.0
        exponents[f"{method}@{n}"] = float(np.polyfit(np.log(rows), np.log(col.to_numpy(float)), 1)[0]) if ok else None
    return med, exponents


def projection(spec, registry, out: Path, data_dir) -> pd.DataFrame:
    """The spec's dry run: per method, core-hours done, estimated and not estimable."""
    from rfbench.execution import runner
    from rfbench.execution.runconfig import RunConfig

    plan = spec.plan
    import pandas as pd

    # one dry run per group of the plan (the spec's excluded cells are never run, so never counted)
    return pd.concat([runner.dry_run(datasets, methods, plan.features, plan.protocol, out,
                                     RunConfig(data_dir=data_dir), registry=registry)
                      for datasets, methods in plan.method_groups()], ignore_index=True)


def xrfm_memory_lines(path: Path) -> list[str]:
    """xrfm's CPU memory against its fitting rows (bench/perf/xrfm_memory.py) and what its check
    estimates at the largest sets; [] before that script has run."""
    if not path.is_file():
        return []
    measured = json.loads(path.read_text())
    lines = ["", "### xrfm on the CPU", "",
             "xRFM keeps up to 60 000 rows in one leaf on the CPU and holds float32 rows × rows kernels, so its "
             "peak grows with the square of its fitting rows (`bench/perf/xrfm_memory.py`, "
             "`results/xrfm-memory.json`, one thread):", "",
             "| fitting rows | peak over the baseline (GB) | seconds |", "|---:|---:|---:|"]
    lines += [f"| {r['fit_rows']} | {r['fit_peak_gb']:.2f} | {r['fit_s']:.0f} |" for r in measured["rows"]]
    refused = [name.removeprefix("uci-") for name, r in measured["largest_sets"].items()
               if r["estimate_gib"] > measured["max_memory_gib"]]
    lines += ["", f"The growth between the two largest sizes is {measured['bytes_per_kernel_entry_measured']:.1f} "
              f"bytes per kernel entry beside {measured['fixed_gib_measured']:.2f} GiB; the method's check uses "
              f"{measured['bytes_per_kernel_entry_used']:g} and {measured['fixed_gib_used']:.2f} GiB and "
              f"refuses a CPU fit estimated over max_memory = {measured['max_memory_gib']:g} GiB in one line before "
              "xRFM starts. At the largest sets (the first inner fold's training part):", "",
              "| set | fitting rows | estimate (GiB) |", "|---|---:|---:|"]
    lines += [f"| {name.removeprefix('uci-')} | {r['fit_rows']} | {r['estimate_gib']:.1f} |"
              for name, r in measured["largest_sets"].items()]
    if refused:
        lines += ["", f"So on the CPU xrfm refuses on {', '.join(refused)}; on a GPU xRFM sizes its leaves to the "
                  "card and no limit applies."]
    return lines


def estimator_error(path: Path) -> str:
    """The estimator's measured held-out error (bench/perf/estimate_accuracy.py) as a clause, or ''."""
    if not path.is_file():
        return ""
    rows = {r["gap"]: r for r in json.loads(path.read_text())["rows"] if r["law"] == "estimator"}
    near, far = rows[min(rows)], rows[max(rows)]
    return (f"; predicting each finished set of the committed stores from the smaller ones, it was within "
            f"2× of the measured time in {100 * near['within_2x']:.0f} % of {near['cells']} cells, and for a "
            f"set {far['gap']:g}× beyond every finished one in {100 * far['within_2x']:.0f} % (within 10×: "
            f"{100 * far['within_10x']:.0f} %; `bench/perf/estimate_accuracy.py`)")


def fit_seconds(row: dict) -> float | None:
    """A uci_memory.py row's seconds as the estimator counts a task's: its CPU seconds where the row has
    them (rows measured since it records them), else its wall time (an upper bound on a busy machine)."""
    return row.get("cpu_s") if row.get("cpu_s") is not None else row.get("fit_s")


def bounded_by_largest_fit(per_method: pd.DataFrame, memory: Path, result: dict) -> list[str]:
    """Lines naming the methods whose dry-run estimate means an average task slower than their measured
    fit at the largest set (bench/perf/uci_memory.py: keggundirected, n = 500), and the total with
    their tasks bounded by that fit; [] without the measurement or such a method."""
    if not memory.is_file():
        return []
    fit_s = {r["method"]: fit_seconds(r) for r in json.loads(memory.read_text())["rows"]
             if r["status"] == "done" and fit_seconds(r) is not None}
    over = {m: row for m, row in per_method.iterrows()
            if m in fit_s and row["to_run"] > 0 and row["est_s"] / row["to_run"] > fit_s[m]}
    if not over:
        return []
    bounded_s = sum(min(row["est_s"], row["to_run"] * fit_s[m]) if m in fit_s else row["est_s"]
                    for m, row in per_method.iterrows() if not np.isnan(row["est_s"])) + per_method["done_s"].sum()
    result["core_hours_total_bounded_by_largest_fit"] = bounded_s / 3600
    parts = [f"{m} ({row['est_s'] / 3600:.0f} core-hours for {int(row['to_run'])} tasks, {row['est_s'] / row['to_run']:.0f} s "
             f"a task, against {fit_s[m]:.0f} s measured)" for m, row in over.items()]
    return [f"Known over-estimates: the dry run gives {', '.join(parts)} an average task slower than their measured fit "
            "at the largest set, keggundirected at n = 500 (the table of the largest set below): they extrapolate "
            "the small sets' times. With every task of a method bounded by that fit (an upper bound where a "
            f"method's time grows with rows and n), the total is {bounded_s / 3600:.0f} core-hours.", ""]


def gpu_summary_lines(rows: list[dict]) -> list[str]:
    """Issue 44 item 3 read off uci_gpu.py's rows: FALKON at M = 10 000 against the best GP row of each
    set (RMSE, fit time, memory), and each device fit against its CPU twin (same fit, same split)."""
    done = [r for r in rows if r.get("status") == "done"]
    lines = ["", "FALKON at M = 10 000 against the best GP row of the same set (the lowest RMSE among the "
             "`gp` / `gp-sod` rows above, either device); the target is an RMSE within 2 % of it at ≥ 10× "
             "less fit time and ≤ 4 GB:", "",
             "| set | FALKON M = 10 000 RMSE | best GP row | its RMSE | RMSE ratio | FALKON s (8 GiB blocks) | "
             "GP row s | time ratio | FALKON peak GB (8 GiB / 1 GiB blocks) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        fk = [r for r in done if r["dataset"] == ds and r["role"] == "falkon M=10000"]
        small = [r for r in done if r["dataset"] == ds and r["role"].startswith("falkon M=10000, factor_bytes")]
        gps = [r for r in done if r["dataset"] == ds and r["method"] in ("gp", "gp-sod")]
        if not fk or not gps:
            continue
        f, g = fk[0], min(gps, key=lambda r: r["rmse"])
        peaks = f"{f['peak_gb']:.2f}" + (f" / {small[0]['peak_gb']:.2f} ({small[0]['seconds']:.1f} s)" if small else "")
        lines.append(f"| {ds.removeprefix('uci-')} | {f['rmse']:.4f} | {g['role']} ({g['device']}) | {g['rmse']:.4f} | "
                     f"{f['rmse'] / g['rmse']:.3f} | {f['seconds']:.1f} | {g['seconds']:.1f} | "
                     f"{g['seconds'] / f['seconds']:.2f} | {peaks} |")
    lines += ["", "Each device fit against its CPU twin (the same fit on the same split; the CPU with "
              "the BLAS threads given, the fits side by side):", "",
              "| role | set | CPU s | device s | speed-up | CPU RMSE | device RMSE | relative difference |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r.get("device") == "cpu" or r.get("role") not in {c["role"] for c in rows if c.get("device") == "cpu"}:
            continue
        twin = next((c for c in rows if c.get("device") == "cpu" and c["role"] == r["role"]
                     and c["dataset"] == r["dataset"]), None)
        if twin is None:
            continue
        if r.get("status") != "done" or twin.get("status") != "done":
            why = r.get("message") or twin.get("message") or r.get("status")
            lines.append(f"| {r['role']} | {r['dataset'].removeprefix('uci-')} | "
                         f"{'' if twin.get('seconds') is None else format(twin['seconds'], '.1f')} | "
                         f"{r.get('status')}: {str(why)[:120]} |  |  |  |  |")
            continue
        lines.append(f"| {r['role']} | {r['dataset'].removeprefix('uci-')} | {twin['seconds']:.1f} | "
                     f"{r['seconds']:.2f} | {twin['seconds'] / r['seconds']:.0f}× | {twin['rmse']:.6f} | "
                     f"{r['rmse']:.6f} | {abs(r['rmse'] - twin['rmse']) / twin['rmse']:.1e} |")
    return lines


def device_records(results: Path) -> pd.DataFrame:
    """The done tasks of ``results`` that a torch device computed (rfbench.store.on_device, the rule
    the estimators use), with their invocation and finishing time: the device table's rows."""
    from rfbench.store import RunDir, on_device

    fields = ["dataset", "method", "n_features", "fold", "status", "device", "invocation", "total_s", "finished_at"]
    rows = pd.DataFrame(RunDir(results, read_only=True).columns(fields), columns=fields)
    rows = rows[(rows["status"] == "done") & rows["device"].map(on_device)]
    return rows.astype({"n_features": int, "fold": int, "total_s": float})


def device_run_lines(on_gpu: pd.DataFrame, results: Path, result: dict) -> list[str]:
    """The suite's tasks computed through `rfbench run --device cuda`: per invocation its command,
    machine and wall time (start to its last finished task), and the median seconds of one task per
    set and (method, n) (a task's own time: it shared the GPU with the other slots)."""
    if not len(on_gpu):
        return []
    invocations = {}
    for line in (results / "runs.jsonl").read_text().splitlines():
        info = json.loads(line) if line.strip() else {}
        if info.get("invocation") in set(on_gpu["invocation"]):
            invocations[info["invocation"]] = info
    lines = ["", "### The largest sets through `rfbench run --device cuda`", ""]
    summary = []
    for inv, info in invocations.items():
        mine = on_gpu[on_gpu["invocation"] == inv]
        start = pd.Timestamp(info["started_at"])
        wall = (pd.to_datetime(mine["finished_at"]).max() - start).total_seconds()
        machine = info.get("machine", {})
        lines.append(f"`{info['command'].replace(' --out /tmp/uci-large', '')}` on a GPU machine "
                     f"({machine.get('cpu_count')} cores, {machine.get('memory_gb')} GB; {info.get('gpu_slots')} "
                     f"GPU slots, {info.get('threads_per_worker')} threads per worker): {len(mine)} tasks finished "
                     f"in {wall:.0f} s of wall time, {mine['total_s'].sum() / 3600:.2f} task-hours, before the "
                     "session's device time ran out (a stopped run keeps its finished tasks; the rest resume).")
        summary.append({"invocation": inv, "tasks": int(len(mine)), "wall_s": wall,
                        "task_hours": float(mine["total_s"].sum() / 3600)})
    med = on_gpu.groupby(["dataset", "method", "n_features"])["total_s"].agg(["median", "size"])
    lines += ["", "| set | method | n | tasks | median seconds of one task |", "|---|---|---:|---:|---:|"]
    for (d, m, n), row in med.iterrows():
        lines.append(f"| {d.removeprefix('uci-')} | {m} | {n} | {int(row['size'])} | {row['median']:.1f} |")
    result["device_runs"] = summary
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(ROOT / "results" / "uci-splits"))
    ap.add_argument("--json", default=str(ROOT / "results" / "uci-cost.json"))
    ap.add_argument("--markdown", default=str(ROOT / "docs" / "uci-cost.md"))
    ap.add_argument("--gpu", default=str(ROOT / "results" / "uci-gpu.json"),
                    help="bench/perf/uci_gpu.py's measurement on a GPU machine, when there is one")
    ap.add_argument("--memory", default=str(ROOT / "results" / "uci-memory.json"))
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)

    from rfbench import registry as registry_mod
    from rfbench.execution.estimate import cpu_path_only, task_cost
    from rfbench.experiments.spec import load_spec
    from rfbench.store import device_tasks, load_results, run_walltime

    registry = registry_mod.load()
    spec = load_spec("uci-splits", registry)
    df = load_results([Path(args.results)], protocol=spec.plan.protocol.key())
    done = df[df["status"] == "done"].astype({"total_s": float, "n_features": int})
    on_gpu = device_records(Path(args.results))
    on_cpu = cpu_path_only(done.astype({"fold": int}), device_tasks([Path(args.results)]))
    med, exponents = growth(on_cpu, registry)      # the growth of the CPU path: a GPU's times are apart
    table = projection(spec, registry, Path(args.results), args.data_dir)

    # core-seconds done: a CPU task's CPU seconds (the estimator's measure), a device task's wall time (its
    # GPU slot's, which the host's CPU seconds do not show)
    done_s = pd.concat([on_cpu.assign(cost_s=task_cost(on_cpu)),
                        done.drop(on_cpu.index).assign(cost_s=lambda d: d["total_s"])]).groupby("method")["cost_s"].sum()
    wall_done_s = float(done["total_s"].sum())
    per_method = table.groupby("method").agg(to_run=("to_run", "sum"), done=("done", "sum"),
                                             est_s=("est_s", lambda s: float(np.nansum(s))),
                                             unestimated=("est_s", lambda s: int(np.isnan(s).sum())))
    per_method["done_s"] = done_s.reindex(per_method.index).fillna(0.0)
    per_method = per_method.reindex(spec.plan.methods)
    total_h = (per_method["est_s"].sum() + per_method["done_s"].sum()) / 3600
    wall_s, invocations = run_walltime(Path(args.results))
    done_h = per_method["done_s"].sum() / 3600
    result = {
        "machine": "2-core development VM (noisy: the run shared its cores with other work)",
        "protocol": spec.plan.protocol.key(),
        "tasks_done": int(per_method["done"].sum()), "tasks_to_run": int(per_method["to_run"].sum()),
        "measured_wall_hours_2_cores": wall_s / 3600, "measured_invocations": invocations,
        "measured_core_hours_done": done_h, "measured_task_wall_hours_done": wall_done_s / 3600,
        "core_hours_total": total_h, "wall_hours_2_cores": total_h / 2, "wall_hours_16_cores": total_h / 16,
        "per_method": {m: {k: (float(v) if isinstance(v, (float, np.floating)) else int(v)) for k, v in row.items()}
                       for m, row in per_method.iterrows()},
        "median_task_s": {d: {f"{m}@{n}": (None if pd.isna(v) else float(v)) for (m, n), v in row.items()}
                          for d, row in med.iterrows()},
        "rows_exponent": exponents,
    }

    lines = ["# Cost of the UCI fixed-split suite (generated by `bench/perf/uci_cost.py`)", "",
             f"From the records in `results/uci-splits` ({result['tasks_done']} tasks done, protocol "
             f"`{result['protocol']}`), on the {result['machine']}. Regenerate with "
             "`RFBENCH_DATA_DIR=../shared/datasets python bench/perf/uci_cost.py`.", "",
             "## Projected cost of the whole spec (`rfbench reproduce uci-splits --dry-run`)", "",
             "| method | tasks done | core-h done | tasks to run | core-h estimated | cells not estimable |",
             "|---|---:|---:|---:|---:|---:|"]
    for m, row in per_method.iterrows():
        lines.append(f"| {m} | {int(row['done'])} | {row['done_s'] / 3600:.2f} | {int(row['to_run'])} | "
                     f"{row['est_s'] / 3600:.1f} | {int(row['unestimated'])} |")
    lines += ["", f"Measured so far: the {result['tasks_done']} finished tasks took {done_h:.2f} core-hours (their CPU "
              f"seconds; a GPU task's wall time) and {wall_s / 3600:.2f} h of wall time ({invocations} invocation(s), "
              f"`rfbench report`'s run wall time); {len(on_gpu)} of them ran on a GPU machine (below), the rest on "
              f"the 2 cores. Their records' own wall times add up to {wall_done_s / 3600:.2f} task-hours: the "
              "machine ran tests and other work beside the suite, and every estimate here reads CPU seconds "
              "(`rfbench.execution.estimate.task_cost`).", "",
              f"Total: {total_h:.0f} core-hours estimated (done + to run, cells that cannot be estimated yet "
              f"left out), i.e. {total_h / 2:.0f} h of wall time on 2 cores and {total_h / 16:.1f} h on 16. The "
              "estimates of cells with no finished task come from a power law in rows and inputs fitted to "
              "the method's finished sets (`rfbench status`'s estimator), or from what a method declares "
              "(methods.yaml `cost_scaling`: gp-sod's time stops growing at its N rows, svgp's budget is capped "
              "at the rows, so its sets smaller than n say nothing of n)"
              + estimator_error(ROOT / "results" / "estimate-accuracy.json")
              + ": beyond the largest finished set they are an order of magnitude, not a promise.", ""]
    lines += bounded_by_largest_fit(per_method, Path(args.memory), result)
    lines += ["## Median CPU seconds of one task (one split) by set, in row order", "",
              "On the CPU (the NumPy path, one BLAS thread unless the run gave more; the tasks a GPU computed "
              "are in their own table below).", ""]
    cols = list(med.columns)
    lines.append("| set | rows | " + " | ".join(f"{m} n={n}" for m, n in cols) + " |")
    lines.append("|---|---:|" + "---:|" * len(cols))
    for d, row in med.iterrows():
        lines.append(f"| {d} | {registry.dataset(d).m} | " + " | ".join(
            "" if pd.isna(v) else f"{v:.2f}" for v in row) + " |")
    lines.append("| exponent a (t ∝ rows^a) | | " + " | ".join(
        "" if exponents[f"{m}@{n}"] is None else f"{exponents[f'{m}@{n}']:.2f}" for m, n in cols) + " |")
    largest = ["uci-kin40k", "uci-protein", "uci-tamielectric", "uci-keggdirected", "uci-keggundirected"]
    pending = table[table["dataset"].isin(largest) & (table["n"] == 500) & (table["to_run"] > 0)]
    if len(pending):
        result["pending_largest_n500"] = pending.groupby("method")["est_s"].sum().div(3600).to_dict()
        lines += ["", "## Pending: the five largest sets at n = 500", "",
                  "These cells are not run on the 2-core machine; a GPU machine runs the device methods' share "
                  "(`bench/perf/gpu_kit.py --sets uci-large` prints the command, `uci_large_run`: `rfbench run "
                  "--datasets " + ",".join(largest) + " --protocol published --device cuda` resumed from the "
                  "committed records), the CPU-only methods need many cores "
                  "(`--backend dask`, docs/cluster.md). Their dry-run estimate (core-hours of one core, ten "
                  "splits each; an empty cell: no estimate yet):", "",
                  "| method | " + " | ".join(d.removeprefix("uci-") for d in largest) + " | total |",
                  "|---|" + "---:|" * (len(largest) + 1)]
        for method, grp in pending.groupby("method", sort=False):
            est = grp.set_index("dataset")["est_s"].div(3600)
            cells = ["" if d not in est or np.isnan(est[d]) else f"{est[d]:.1f}" for d in largest]
            lines.append(f"| {method} | " + " | ".join(cells) + f" | {np.nansum(est.to_numpy()):.1f} |")
    memory = Path(args.memory)
    if memory.is_file():
        rows = json.loads(memory.read_text())["rows"]
        result["largest_set"] = rows
        m_train = next((r["m_train"] for r in rows if r.get("m_train")), None)
        lines += ["", f"## The largest set: keggundirected ({m_train:,} training rows), n = 500, split 0".replace(",", " "),
                  "", "One fit as the runner makes it (inner CV, refit, predict), one BLAS thread, one fresh process "
                  "per method (`bench/perf/uci_memory.py`, `results/uci-memory.json`); the machine was running the "
                  "suite on both cores meanwhile, so the wall times (seconds) are upper bounds; the CPU seconds (rows "
                  "measured since the script records them) are the fit's own, and the core-hours measured read them "
                  "where given. Methods that stopped at the time limit show the peak reached until then (a lower "
                  "bound).", "",
                  "| method | status | seconds | peak memory (GB) |", "|---|---|---:|---:|"]
        projected = table[(table["dataset"] == "uci-keggundirected") & (table["n"] == 500)].set_index("method")
        lines[-2:] = ["| method | status | seconds | CPU seconds | peak memory (GB) | ten splits measured (core-h) | "
                      "ten splits projected by the dry run (core-h) |", "|---|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            seconds = "" if r.get("fit_s") is None else f"{r['fit_s']:.0f}"
            cpu = "" if r.get("cpu_s") is None else f"{r['cpu_s']:.0f}"
            measured = "" if fit_seconds(r) is None else f"{10 * fit_seconds(r) / 3600:.2f}"
            # the dry run's estimate of one task (of those left) times ten; none once every split is done
            left = projected.loc[r["method"]] if r["method"] in projected.index else None
            guess = (10 * left["est_s"] / left["to_run"]) if left is not None and left["to_run"] > 0 else np.nan
            lines.append(f"| {r['method']} | {r['status']} | {seconds} | {cpu} | {r['peak_gb']:.2f} | {measured} | "
                         f"{'' if np.isnan(guess) else f'{guess / 3600:.2f}'} |")
        lines += ["", "Where both are given, the measured fit on the largest set is the better guide: the dry run's "
                  "power law is fitted to the small sets only (SALSA and KRR switch to Nyström above 4 000 rows, "
                  "FALKON's cost is dominated by its grid on small sets), so its projections of the large sets "
                  "can be far off."]
        lines += xrfm_memory_lines(memory.parent / "xrfm-memory.json")
    gpu = Path(args.gpu)
    lines += ["", "## On a GPU machine (one H200 or H100, 16 cores)", ""]
    if gpu.is_file():
        measured = json.loads(gpu.read_text())
        result["gpu"] = measured
        lines += [f"`bench/perf/uci_gpu.py` on {measured['machine'].get('gpu', measured['device'])} "
                  f"({measured['machine'].get('cpu_count')} cores), split 0 of each set, one fit per child process "
                  "(`results/uci-gpu.json`):", "",
                  "| role | set | device | status | seconds | RMSE | peak memory (GB) |", "|---|---|---|---|---:|---:|---:|"]
        for r in measured["rows"]:
            seconds, rmse, peak = ("" if r.get(k) is None else format(r[k], f)
                                   for k, f in (("seconds", ".1f"), ("rmse", ".4f"), ("peak_gb", ".2f")))
            lines.append(f"| {r['role']} | {r['dataset'].removeprefix('uci-')} | {r['device']} | {r['status']} | "
                         f"{seconds} | {rmse} | {peak} |")
        if any(r["dataset"] == "uci-keggdirected" and r["method"] == "gp-sod" for r in measured["rows"]):
            # measured on 2026-11-30 01:48, before commit ac08c6dd changed this fit: said beside its rows
            lines += ["", "The gp-sod rows of keggdirected above were measured before `gp.column_scales` (commit "
                      "ac08c6dd): a column constant up to rounding in that subset set the length-scale bounds, "
                      "hence the CPU fit's RMSE and the GPU's failed jitter ladder; docs/device.md gives the same "
                      "CPU fit after the fix. The records of `results/uci-splits` are all from the fixed code."]
    else:
        lines += ["Not measured yet: no GPU machine has been lent to a session since the script was written (on "
                  "2026-11-28 the device tool answered that no new machine was lent at present). The prepared run, "
                  "about 7 minutes: `RFBENCH_DATA_DIR=... python bench/perf/uci_gpu.py --device cuda --budget-s 420 "
                  "--factor-bytes 8589934592 --cpu-fits 3 --cpu-threads 4` (FALKON at M = 10 000 against the GP "
                  "rows on kin40k, protein and keggdirected, and falkon / gp on the GPU against their CPU twins), "
                  "then `rfbench run --datasets uci-kin40k,uci-protein,uci-tamielectric,uci-keggdirected,"
                  "uci-keggundirected --protocol published --features 500 --device cuda --gpu-slots 4` for the "
                  "device methods' share of the largest sets."]
    lines += device_run_lines(on_gpu, Path(args.results), result)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    Path(args.markdown).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.json} and {args.markdown}: {total_h:.1f} core-hours projected, "
          f"{result['tasks_done']} tasks done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
