"""``rfbench publish --output DIR``: every spec's results as one static site, opened from the
file system or served by any web server: no network, no CDN.

The site (``DIR/``, every page flat in it, each table's CSV beside its page):

* ``index.html``: every spec (bench/*.yaml) with its task counts and check, every suite of the
  registry with its datasets and tasks, the leaderboards, datasets, methods and exports;
* ``spec-<name>.html``: the page of ``rfbench report --all`` for the spec
  (:func:`rfbench.experiments.html_page.spec_page`), without the check's text dump;
* ``suite-<name>.html``: a leaderboard per suite (:data:`LEADERBOARDS`, where results exist): per
  spec and budget n, the average rank over the datasets, wins/ties/losses of every method against
  the best and of every pair (:mod:`rfbench.reporting.pairwise`), the critical-difference diagram
  and average rank against wall time;
* ``run-<name>.html``: with ``runs``, each of the user's runs beside the baseline of its datasets
  (:mod:`rfbench.experiments.site_runs`);
* ``dataset-<name>.html`` and ``method-<name>.html``: the cells of a dataset or a method in every
  spec (mean error ± std, tasks, times, the chosen parameters);
* ``exports/<spec>.csv|.parquet`` and ``exports/suite-<name>.csv|.parquet``: the tasks, one row per
  task, the columns of :data:`EXPORT_COLUMNS` (documented on ``columns.html``).

Every spec's results are read once, where :mod:`rfbench.experiments.sources` resolves them (the
local results directory, else the shipped baseline); the statistics of a spec's page are computed
once. The figures are inline SVG with a tooltip per point (:mod:`rfbench.reporting.svg_figures`);
paths are shown relative to the project (:mod:`rfbench.reporting.shown_paths`). Nothing is
written outside ``DIR``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rfbench.errors import UsageError
from rfbench.experiments import baselines, html_page, site_runs, sources
from rfbench.experiments.spec import Spec, all_specs
from rfbench.registry import Registry
from rfbench.reporting import pairwise, plot, svg_figures
from rfbench.reporting.html_markup import Markup, attr, document, esc, simple_table
from rfbench.reporting.shown_paths import shown
from rfbench.reporting.site_markup import decorate, site_header
from rfbench.store import COLUMNS, RunDir, atomic_write_text

#: suite → the specs whose results make its leaderboard (each spec's own protocol and budgets: never pooled)
LEADERBOARDS = {"uci": ("uci-splits",), "torgo": ("gfc2016-table1", "gfc2016-table4", "torgo-modern"),
                "gbrff": ("gbrff2020-table2",), "salsa": ("salsa2016-table1",)}

TIMES = ["tune_s", "fit_s", "predict_s", "total_s", "cpu_s", "preprocess_s"]

#: the columns of the exports, in order, and what each holds
EXPORT_COLUMNS = {
    "spec": "the spec (bench/<spec>.yaml) whose results the row belongs to",
    "results": "the results directory the row was read from (its name; a spec may read several)",
    "source": "where it was read: 'local' (a results directory here) or 'baseline' (the shipped Parquet)",
    "dataset": "the dataset (datasets.yaml)",
    "method": "the method (methods.yaml)",
    "n_features": "the feature budget n",
    "fold": "the outer fold (cv) or split (splits, fixed, holdout) of the task",
    "seed": "the seed of the task",
    "protocol": "the protocol key (e.g. cv-o10-i5, published-…): how the outer and inner splits were made",
    "status": "done, error or timeout",
    "metric": "the metric of the error (e.g. mse, rmse, accuracy error)",
    "error": "the test error of the task in that metric (lower is better unless the metric says otherwise)",
    "tune_s": "seconds spent choosing hyper-parameters (inner cross-validation)",
    "fit_s": "seconds of the final fit",
    "predict_s": "seconds predicting the test part",
    "total_s": "seconds of the whole task",
    "cpu_s": "CPU seconds of the task",
    "preprocess_s": "seconds loading and preprocessing the data",
    "n_train": "training rows",
    "n_test": "test rows",
    "threads": "threads the task ran with",
    "params": "the chosen hyper-parameters (JSON text), where the record has them (on the dataset and method pages: "
              "a value every task chose, else the median and range over the tasks, or the commonest choice)",
    "message": "the error message of a failed task",
    "code": "the git commit of the code that ran the task (+dirty: uncommitted changes); empty where not recorded",
    "device": "what the task ran on (cpu unless the record names a device)",
    "finished_at": "when the task finished (UTC)",
}


def safe_name(name: str) -> str:
    """A name as a file name of the site (letters, digits, . _ - kept; anything else '_')."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(name)) or "_"


def spec_file(name: str) -> str:
    return f"spec-{safe_name(name)}.html"


def dataset_file(name: str) -> str:
    return f"dataset-{safe_name(name)}.html"


def method_file(name: str) -> str:
    return f"method-{safe_name(name)}.html"


def suite_file(name: str) -> str:
    return f"suite-{safe_name(name)}.html"


def link(text, href: str) -> Markup:
    return Markup(f'<a href="{attr(href)}">{esc(text)}</a>')


# -- the tasks of a spec ----------------------------------------------------------------------------------------------

def _tasks_of_source(src, protocol: str | None) -> pd.DataFrame:
    """Every task row of one source (a shipped baseline, or a results directory here) with its code
    version and device, in the export's columns (without spec)."""
    if sources.is_shipped(src):
        frame = src.baseline().frame.copy()
        where, name = "baseline", src.directory.name
    else:
        path = Path(src)
        frame = pd.DataFrame(RunDir(path).columns([*COLUMNS, "invocation", "device"]),
                             columns=[*COLUMNS, "invocation", "device"])
        if frame.empty and (path / "results.csv").is_file():
            frame = pd.read_csv(path / "results.csv").assign(invocation=None, device=None)
        frame["code"] = baselines.code_of(frame, path) if len(frame) else []
        frame["device"] = [d if isinstance(d, str) and d else baselines.DEFAULT_DEVICE for d in frame["device"]]
        where, name = "local", path.name
    if protocol is not None and len(frame):
        frame = frame[frame["protocol"] == protocol]
    frame = frame.assign(results=name, source=where)
    for c in EXPORT_COLUMNS:
        if c not in frame:
            frame[c] = None
    return frame


def spec_tasks(spec: Spec) -> pd.DataFrame:
    """One row per task of the spec's results directories (each where sources resolves it), the
    spec's protocol only, in the columns of :data:`EXPORT_COLUMNS`: the tasks its page reports."""
    frames = [_tasks_of_source(src, spec.protocol_key) for _, src in sources.of_spec(spec) if src is not None]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=list(EXPORT_COLUMNS))
    out = pd.concat(frames, ignore_index=True).assign(spec=spec.name)
    # a task in two of the spec's directories counts once, as load_results pools them: a finished
    # copy first, then the spec's own directory before those it also reads
    out = (out.assign(_rank=(out["status"] != "done").astype(int)).sort_values("_rank", kind="stable")
           .drop_duplicates(["dataset", "method", "n_features", "fold", "seed", "protocol"]))
    out = out[list(EXPORT_COLUMNS)]
    for c in ("n_features", "fold", "seed"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype("Int64")
    for c in ["error", *TIMES]:
        out[c] = pd.to_numeric(out[c], errors="coerce")
    return out.sort_values(["results", "dataset", "method", "n_features", "fold", "seed"], kind="stable",
                           ignore_index=True)


def write_export(frame: pd.DataFrame, stem: Path) -> list[Path]:
    """``stem``.csv and ``stem``.parquet of an export frame."""
    csv_path, parquet_path = stem.with_suffix(".csv"), stem.with_suffix(".parquet")
    atomic_write_text(csv_path, frame.to_csv(index=False))
    frame.astype({c: "string" for c in frame.columns if frame[c].dtype == object}).to_parquet(
        parquet_path, index=False)
    return [csv_path, parquet_path]


# -- cells: a dataset's or a method's results in every spec -------------------------------------------------------------

def _fmt_value(v) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return json.dumps(v) if not isinstance(v, str) else v
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e6 else f"{v:.3g}"


def _mode_params(values) -> str:
    """The chosen hyper-parameters of a cell's tasks (their records' ``params``), one entry per
    parameter: its value when every task chose the same, else the median and range of a number, or
    the most common choice and how many tasks made it (empty: none recorded)."""
    chosen = []
    for p in values:
        if isinstance(p, str) and p not in ("", "{}", "null"):
            try:
                d = json.loads(p)
            except ValueError:
                continue
            if isinstance(d, dict) and d:
                chosen.append(d)
    if not chosen:
        return ""
    parts = []
    for key in dict.fromkeys(k for d in chosen for k in d):
        vals = [d[key] for d in chosen if key in d]
        texts = [json.dumps(v, sort_keys=True) for v in vals]
        if len(set(texts)) == 1:
            parts.append(f"{key} = {_fmt_value(vals[0])}")
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            a = np.asarray(vals, float)
            parts.append(f"{key} ≈ {_fmt_value(float(np.median(a)))} ({_fmt_value(a.min())}–{_fmt_value(a.max())})")
        else:
            top = pd.Series(texts).value_counts()
            parts.append(f"{key} = {top.index[0]} ({top.iloc[0]} of {len(vals)})")
    return "; ".join(parts)


def cell_table(tasks: pd.DataFrame) -> pd.DataFrame:
    """(spec, dataset, method, n_features, protocol) cells of finished tasks: metric, mean error,
    std, tasks, mean total and fit seconds, the chosen parameters."""
    done = tasks[tasks["status"] == "done"]
    if done.empty:
        return pd.DataFrame(columns=["spec", "dataset", "method", "n_features", "protocol", "metric", "mean", "std",
                                     "n", "total_s", "fit_s", "params"])
    keys = ["spec", "dataset", "method", "n_features", "protocol"]
    g = done.groupby(keys, sort=True, dropna=False)
    out = g.agg(metric=("metric", "first"), mean=("error", "mean"), std=("error", "std"), n=("error", "size"),
                total_s=("total_s", "mean"), fit_s=("fit_s", "mean"), params=("params", _mode_params)).reset_index()
    return out


def _num(v, fmt: str) -> str:
    return "" if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA else format(v, fmt)


def _cells_html(cells: pd.DataFrame, by: str) -> str:
    """One table of cells; ``by`` the column that links to its own page (method or dataset)."""
    to_page = method_file if by == "method" else dataset_file
    header = ["spec", by, "n", "protocol", "metric", "error (mean ± std)", "tasks", "total s", "fit s",
              "chosen parameters"]
    rows = []
    for r in cells.itertuples(index=False):
        err = _num(r.mean, ".4g") + (f" ± {_num(r.std, '.2g')}" if _num(r.std, ".2g") else "")
        rows.append([link(r.spec, spec_file(r.spec)), link(getattr(r, by), to_page(getattr(r, by))),
                     _num(r.n_features, "d") if r.n_features is not pd.NA else "", r.protocol, r.metric or "", err,
                     int(r.n), _num(r.total_s, ".3g"), _num(r.fit_s, ".3g"), r.params])
    return simple_table(header, rows, left=5, column_classes={9: "w"})


# -- leaderboards ------------------------------------------------------------------------------------------------------

@dataclass
class Board:
    """One leaderboard: a spec's results on a suite's datasets at one budget n."""
    spec: str
    n: int
    table: str = ""
    figures: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    matrix: str = ""


def pair_table(pairs: pd.DataFrame) -> str:
    """The wins/ties/losses matrix of a board as a table: the row's method against the column's."""
    rows = [[link(a, method_file(a)), *("" if a == b else "/".join(map(str, pairs.loc[a, b])) for b in pairs.columns)]
            for a in pairs.index]
    return simple_table(["method", *(f"vs {b}" for b in pairs.columns)], rows, left=1)


def boards(spec: Spec, tasks: pd.DataFrame, datasets: set[str], alpha: float = 0.05) -> list[Board]:
    """The leaderboards of a spec's tasks on ``datasets``, one per budget n (a budget with fewer than
    two methods or datasets to rank is a note)."""
    done = tasks[(tasks["status"] == "done") & tasks["dataset"].isin(datasets)]
    if done.empty:
        return []
    results = done[[c for c in COLUMNS if c in done]].astype({"n_features": int, "fold": int, "seed": int})
    out = []
    for n in sorted(results["n_features"].unique()):
        b = Board(spec.name, int(n))
        at_n = results[results["n_features"] == n]
        # a method run only where another is not (gp below N rows, gp-sod above) is left out and named
        at_n, methods_out = plot.ranking_results(at_n, int(n))
        try:
            res = plot.cd_analysis(at_n, int(n), alpha)
        except UsageError as exc:
            b.notes.append(str(exc))
            out.append(b)
            continue
        if methods_out:
            b.notes.append(plot.left_out_note(methods_out))
        order = res.ranks.sort_values().index
        pairs = pairwise.matrix(at_n, order, list(res.scores.index), alpha, spec.test.name)
        wtl = pairs.loc[:, order[0]]            # every method against the best-ranked one
        ranked = at_n[at_n["dataset"].isin(res.scores.index)]
        cells = ranked.groupby("method").agg(total_s=("total_s", "median"))
        rows = [[link(m, method_file(m)), f"{res.ranks[m]:.2f}", res.n_datasets, *wtl[m],
                 _num(res.scores[m].mean(), ".4g"), _num(cells.loc[m, "total_s"], ".3g")] for m in order]
        b.table = simple_table(["method", "average rank", "datasets", f"wins vs {order[0]}", "ties", "losses",
                                f"mean {res.metric} over datasets", "median total s per task"], rows, left=1)
        b.notes.append(f"{res.n_datasets} datasets where every method is complete"
                       + (f"; left out: {', '.join(res.left_out)}" if res.left_out else "")
                       + f"; wins/ties/losses: {spec.test.name} t-test at α = {alpha:g} against {order[0]}, "
                         "per dataset")
        b.matrix = pair_table(pairs)
        few = plot.too_few_for_cd(res)          # below the fewest datasets its tests can reject on: a line
        if few:
            b.notes.append(few)
        else:
            b.figures.append(svg_figures.figure_html("cd", plot.cd_figure(res), None,
                                                     f"Critical-difference diagram, {spec.name}, n = {n}"))
        seconds = ranked.groupby("method")["total_s"].median()
        b.figures.append(svg_figures.figure_html(
            "rank-time", plot.rank_against_time(res.ranks, seconds, f"{spec.name}, n = {n}: average rank against "
                                                f"median wall time over {res.n_datasets} datasets"), None,
            f"Average rank against wall time, {spec.name}, n = {n} (error against wall time per dataset: the spec's "
            "page)", tips_of=svg_figures.rank_time_tips(res.ranks, seconds, f"n = {n}, {res.n_datasets} datasets")))
        out.append(b)
    return out


PAIR_NOTE = ("Per dataset where every method is complete, the row's method wins when its errors are significantly "
             "lower than the column's (the spec's t-test at α, paired on the folds both finished when the spec's "
             "test is paired), loses when they are significantly higher, and ties otherwise (or with fewer than "
             "two folds); wins + ties + losses is the number of datasets, and (b, a) is (a, b) reversed.")


# -- the site ----------------------------------------------------------------------------------------------------------

NAV = [("Index", "index.html"), ("Specs", "index.html#specs"), ("Suites", "index.html#suites"),
       ("Datasets", "index.html#datasets"), ("Methods", "index.html#methods"), ("Exports", "columns.html")]


@dataclass
class Site:
    output: Path
    pages: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0


class _Writer:
    def __init__(self, output: Path, nav: list[tuple[str, str]]):
        self.output = output
        self.site = Site(output)
        self.nav = nav

    def page(self, name: str, title: str, parts: list[str], *, whole: str | None = None) -> Path:
        """Write a page (``whole``: a finished document, else one built from ``parts``) with the site's
        header, its tables' CSV files beside it."""
        text = whole if whole is not None else document(title, parts)
        text = text.replace("<body>\n", "<body>\n" + site_header(self.nav) + "\n", 1)
        text, csvs = decorate(text, name.removesuffix(".html"))
        path = self.output / name
        atomic_write_text(path, text, durable=False)
        for csv_name, body in csvs.items():
            atomic_write_text(self.output / csv_name, body, durable=False)
            self.site.files.append(self.output / csv_name)
        self.site.pages.append(path)
        return path


_WORK: dict = {}      # what a forked worker draws the spec pages from (set before the pool starts)


def _spec_page(i: int):
    return html_page.spec_page(_WORK["specs"][i], registry=_WORK["registry"], alpha=_WORK["alpha"], check_text=False,
                               draw=svg_figures.figure_html)


def _start_spec_pages(specs: list[Spec], registry: Registry, alpha: float, jobs: int) -> list:
    """The (page, summary) of every spec's page (None before its first finished task), as futures
    drawn by ``jobs`` forked processes (largest results first) while the caller writes the rest;
    one process (or no fork on this platform): drawn here, in order."""
    _WORK.update(specs=specs, registry=registry, alpha=alpha)
    if jobs <= 1 or len(specs) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [_Later(i) for i in range(len(specs))]
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(specs)), mp_context=multiprocessing.get_context("fork"))
    size = [sum(sources.source(d).tasks if sources.is_shipped(sources.source(d)) else 0 for d in s.result_dirs())
            for s in specs]
    futures: list = [None] * len(specs)
    for i in sorted(range(len(specs)), key=lambda i: -size[i]):
        futures[i] = pool.submit(_spec_page, i)
    pool.shutdown(wait=False)
    return futures


class _Later:
    """A spec page drawn when asked for (one process)."""

    def __init__(self, i: int):
        self.i = i

    def result(self):
        return _spec_page(self.i)


def run_files(dirs: list[Path]) -> list[str]:
    """run-<name>.html per run directory (a name met twice numbered: run-<name>-2.html)."""
    out: list[str] = []
    for d in dirs:
        stem, k = f"run-{safe_name(Path(d).name)}", 2
        name = f"{stem}.html"
        while name in out:
            name, k = f"{stem}-{k}.html", k + 1
        out.append(name)
    return out


def build(output: Path, registry: Registry, *, alpha: float = 0.05, jobs: int | None = None,
          progress=None, runs=()) -> Site:
    """Write the site into ``output`` (created if missing; its parent must exist); ``jobs``: the
    processes drawing the spec pages (default: the CPU count); ``runs``: results directories of the
    user's runs, a page each (:mod:`rfbench.experiments.site_runs`), checked before anything is written."""
    started = time.perf_counter()
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise UsageError(f"--output {output} is a file; name a directory for the site")
    run_dirs = site_runs.check_runs(runs)
    (output / "exports").mkdir(parents=True, exist_ok=True)
    say = progress or (lambda line: None)
    w = _Writer(output, NAV[:5] + [("Runs", "index.html#runs")] + NAV[5:] if run_dirs else NAV)
    specs = all_specs(registry)
    drawn = _start_spec_pages(specs, registry, alpha, jobs or os.cpu_count() or 1)
    tasks: dict[str, pd.DataFrame] = {}
    summaries: dict[str, str] = {}
    for spec in specs:
        tasks[spec.name] = spec_tasks(spec)
        if len(tasks[spec.name]):
            w.site.files += write_export(tasks[spec.name], output / "exports" / safe_name(spec.name))
    every = pd.concat([t for t in tasks.values() if len(t)], ignore_index=True) if any(
        len(t) for t in tasks.values()) else pd.DataFrame(columns=list(EXPORT_COLUMNS))
    cells = cell_table(every)

    # suites: exports (each task once: a directory read by several specs counted under its own spec first)
    suite_rows, board_links = [], {}
    unique = every.drop_duplicates(["dataset", "method", "n_features", "fold", "seed", "protocol"])
    for suite, description in registry.suites.items():
        names = {d.name for d in registry.suite(suite)}
        rows = unique[unique["dataset"].isin(names)]
        specs_with = sorted(rows["spec"].unique())
        exported = ""
        if len(rows):
            w.site.files += write_export(rows.reset_index(drop=True), output / "exports" / f"suite-{safe_name(suite)}")
            exported = Markup(f'<a href="exports/suite-{attr(safe_name(suite))}.csv">CSV</a> '
                              f'<a href="exports/suite-{attr(safe_name(suite))}.parquet">Parquet</a>')
        board_specs = [s for s in LEADERBOARDS.get(suite, ()) if s in tasks and len(tasks[s])]
        if board_specs:
            parts = [f"<h1>Leaderboard: suite {esc(suite)}</h1>", f'<p class="sub">{esc(description)}</p>']
            by_name = {s.name: s for s in specs}
            for s in board_specs:
                spec = by_name[s]
                parts.append(f'<h2>spec <a href="{attr(spec_file(s))}">{esc(s)}</a>: {esc(spec.title)}</h2>')
                for b in boards(spec, tasks[s], names, alpha):
                    parts.append(f"<h3>n = {b.n}</h3>" + b.table
                                 + "".join(f'<p class="note">{esc(x)}</p>' for x in b.notes))
                    if b.matrix:
                        parts.append(f"<h4>n = {b.n}: every pair, wins/ties/losses of the row against the column</h4>"
                                     + b.matrix + f'<p class="note">{esc(PAIR_NOTE)}</p>')
                    parts.append("".join(b.figures))
            w.page(suite_file(suite), f"rfbench leaderboard: {suite}", parts)
            board_links[suite] = suite_file(suite)
        suite_rows.append([link(suite, board_links[suite]) if suite in board_links else suite, len(names),
                           rows["dataset"].nunique(), len(rows), int((rows["status"] == "done").sum()),
                           ", ".join(specs_with), exported, description])
        say(f"suite {suite}: {len(rows)} tasks")

    # a page per dataset and per method
    for by, other, to_page in (("dataset", "method", dataset_file), ("method", "dataset", method_file)):
        for name, group in cells.groupby(by, sort=True):
            n_tasks = int(group["n"].sum())
            extra = []
            if by == "dataset" and name in registry.datasets:
                d = registry.datasets[name]
                extra.append(f'<p class="sub">{esc(d.task)}; suites: {esc(", ".join(d.suites) or "none")}; '
                             f"{d.shape[0]} rows × {d.shape[1]} inputs</p>")
            w.page(to_page(name), f"rfbench {by}: {name}",
                   [f"<h1>{esc(by.capitalize())} {esc(name)}</h1>", *extra,
                    f'<p class="sub">{len(group)} cells (spec, {other}, n, protocol) over {n_tasks} finished tasks in '
                    f"{group['spec'].nunique()} spec(s): mean error ± std over the tasks, mean times, the chosen "
                    "parameters (a value every task chose, else the median and range, or the commonest choice)."
                    "</p>", _cells_html(group, other)])
    say(f"{cells['dataset'].nunique()} dataset and {cells['method'].nunique()} method pages")

    for spec, future in zip(specs, drawn, strict=True):
        made = future.result()
        if made is None:
            summaries[spec.name] = "no finished task yet"
            continue
        page, summaries[spec.name] = made
        w.page(spec_file(spec.name), spec.title, [], whole=page)
        say(f"{spec.name}: {len(tasks[spec.name])} tasks")

    # the user's runs, each beside the baseline of its datasets
    run_rows = []
    for d, name in zip(run_dirs, run_files(run_dirs), strict=True):
        rp = site_runs.run_page(d, registry, alpha)
        w.page(name, f"rfbench run: {d.name}", [], whole=rp.html)
        run_rows.append([link(shown(d), name), ", ".join(rp.methods), len(rp.datasets), rp.tasks, rp.against])
        say(f"run {shown(d)}: {rp.tasks} tasks")

    # the columns of the exports, and the index
    w.page("columns.html", "rfbench: the exports", [
        "<h1>Exports: one row per task</h1>",
        '<p class="sub">Each spec\'s tasks (exports/&lt;spec&gt;.csv and .parquet) and each suite\'s '
        "(exports/suite-&lt;suite&gt;.csv and .parquet, each task once), read where the spec's results resolve: "
        "the local results directory, else the baseline that ships with rfbench.</p>",
        simple_table(["column", "meaning"], [[c, m] for c, m in EXPORT_COLUMNS.items()], left=2,
                     column_classes={1: "w"}),
        "<h2>Files</h2>", simple_table(["spec", "tasks", "CSV", "Parquet"], [
            [s.name, len(tasks[s.name]), link(f"{safe_name(s.name)}.csv", f"exports/{safe_name(s.name)}.csv"),
             link(f"{safe_name(s.name)}.parquet", f"exports/{safe_name(s.name)}.parquet")]
            for s in specs if len(tasks[s.name])], left=1)])
    spec_rows = []
    for s in specs:
        t = tasks[s.name]
        counts = t["status"].value_counts() if len(t) else pd.Series(dtype=int)
        page = spec_file(s.name) if (output / spec_file(s.name)).is_file() else None
        spec_rows.append([link(s.name, page) if page else s.name, len(t), int(counts.get("done", 0)),
                          int(len(t) - counts.get("done", 0)), t["dataset"].nunique(), t["method"].nunique(),
                          summaries.get(s.name, ""),
                          link("CSV", f"exports/{safe_name(s.name)}.csv") if len(t) else "", s.title])
    n_ds = cells.groupby("dataset").agg(specs=("spec", "nunique"), methods=("method", "nunique"), tasks=("n", "sum"))
    n_m = cells.groupby("method").agg(specs=("spec", "nunique"), datasets=("dataset", "nunique"), tasks=("n", "sum"))
    w.page("index.html", "rfbench: results", [
        "<h1>rfbench: every spec's results</h1>",
        f'<p class="sub">{len(specs)} specs, {len(every)} tasks, read where each spec\'s results resolve (a local '
        "results directory, else the baseline that ships with rfbench). Click a header to sort a table; type in "
        'its box to filter; every table has its CSV. The exports\' columns: <a href="columns.html">columns.html</a>.'
        "</p>",
        '<h2 id="specs">Specs</h2>',
        simple_table(["spec", "tasks", "done", "failed", "datasets", "methods", "check against the paper / tasks",
                      "export", "title"], spec_rows, left=1, column_classes={8: "w"}),
        *(['<h2 id="runs">Runs</h2>', simple_table(["run", "methods", "datasets", "finished tasks", "compared with"],
                                                   run_rows, left=2, column_classes={4: "w"})] if run_rows else []),
        '<h2 id="suites">Suites</h2>',
        simple_table(["suite", "datasets", "with results", "tasks", "done", "specs", "export", "description"],
                     suite_rows, left=1, column_classes={7: "w"}),
        '<h2 id="datasets">Datasets</h2>',
        simple_table(["dataset", "specs", "methods", "finished tasks"],
                     [[link(d, dataset_file(d)), int(r.specs), int(r.methods), int(r.tasks)]
                      for d, r in n_ds.iterrows()], left=1),
        '<h2 id="methods">Methods</h2>',
        simple_table(["method", "specs", "datasets", "finished tasks"],
                     [[link(m, method_file(m)), int(r.specs), int(r.datasets), int(r.tasks)]
                      for m, r in n_m.iterrows()], left=1)])
    w.site.seconds = time.perf_counter() - started
    # no time in it: two builds of one tree are the same bytes (the command prints the seconds)
    (output / "build.json").write_text(json.dumps({"pages": len(w.site.pages), "tasks": int(len(every))},
                                                  indent=1) + "\n")
    return w.site
