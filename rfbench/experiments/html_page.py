"""Self-contained HTML pages (``rfbench report --format html``): plain HTML with a little inline
CSS, figures as PNG data URIs, no script and no external URL, so one file can be mailed or opened
offline. Every text is escaped (rfbench.reporting.html_markup's building blocks); only the fragments built here
are trusted markup.

* :func:`document` wraps fragments into a page;
* :func:`directory_page` is one results directory: the report's tables with their significance
  marks, the figures of ``rfbench plot`` (and the PNGs a spec wrote into the directory), the check
  against the published table when the directory belongs to a spec, and the provenance of its runs
  (commands, code version, machine) from run.json / runs.jsonl;
* :func:`write_site` writes index.html and one such page per spec with results.

The datasets and methods are those of the :class:`rfbench.registry.Registry` given (the one
:func:`rfbench.registry.load` builds: every function here takes it).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError
from rfbench.experiments import check, reproduce, sources
from rfbench.registry import Registry
from rfbench.reporting import gp_table, plot, report, timing
from rfbench.reporting.html_markup import Markup, attr, document, esc, figure_png, img, simple_table
from rfbench.reporting.shown_paths import scrub, shown
from rfbench.store import atomic_write_text, invocations

# -- one results directory --------------------------------------------------------------------------------------------

FIGURE_CAPTIONS = {"cd": "Critical-difference diagram", "error-vs-n": "Error against the number of features",
                   "walltime": "Wall time per task", "pareto": "Error against wall time, Pareto front dashed",
                   "error-vs-m": "test error against M (the paper's figure; stars: its published cells)",
                   "error-vs-time": "test error against time (the paper's figure; stars: its published cells)"}


def figure_captions(time: timing.TimeMeasure) -> dict[str, str]:
    """FIGURE_CAPTIONS with the time figures' words for ``time`` (wall time: as they are)."""
    if time is timing.WALL:
        return FIGURE_CAPTIONS
    return {**FIGURE_CAPTIONS, "walltime": f"{time.heading} per task",
            "pareto": f"Error against {time.phrase}, Pareto front dashed"}


def png_figure(kind: str, fig, data: pd.DataFrame, caption: str) -> str:
    """A figure as a PNG data URI (the default; ``rfbench publish`` draws SVG with tooltips instead)."""
    return img(figure_png(fig), caption)


def figures_section(results: pd.DataFrame, dirs: list[Path], time_caveat: str | None = None,
                    draw=png_figure, spec=None, time: timing.TimeMeasure = timing.WALL) -> str:
    """Every kind of ``rfbench plot`` that has something to draw, then the PNGs the directories hold
    (a spec's own figures); a kind with nothing to draw is one line saying why. ``time_caveat``:
    what the time figures' titles and captions add (a comparison whose walltimes mix machines);
    ``draw(kind, figure, data, caption)``: the markup of one figure. With a ``draw`` other than
    :func:`png_figure` (the site's SVG), the PNGs of ``spec``'s declared figures are drawn again
    through ``draw`` from the figures.csv beside them (:func:`spec_figures`); a PNG with no such data
    stays the file, with a note saying why. ``time``: which seconds ``results``' ``total_s`` holds
    (:func:`rfbench.reporting.timing.in_cpu_seconds`)."""
    parts, notes = [], []
    caption_caveat = timing.join(time_caveat, timing.busy_note(results) if time is timing.WALL else None)
    captions = figure_captions(time)
    for kind in plot.KINDS:
        try:
            figs, skipped = plot.figures(results, kind, time_caveat=time_caveat, time=time)
        except UsageError as exc:
            notes.append(f"{captions[kind]}: not drawn ({exc})")
            continue
        notes += [f"{captions[kind]}: {s}" for s in skipped]
        for n, fig in figs:
            caveat = f" ({caption_caveat})" if caption_caveat and kind in plot.TIME_KINDS else ""
            parts.append(draw(kind, fig, results, captions[kind] + (f", n = {n}" if n is not None else "") + caveat))
    for d in dirs:
        if sources.is_shipped(d):           # a shipped baseline holds rows, no figures
            continue
        pngs = sorted(Path(d).glob("*.png"))
        if draw is not png_figure and pngs:
            drawn, left = spec_figures(spec, Path(d), pngs, draw)
            parts += drawn
            pngs = [png for png, _ in left]
            notes += [f"{png.name} (in {shown(d)}): shown as the PNG file, without tooltips ({why})"
                      for png, why in left]
        for path in pngs:
            parts.append(img(path.read_bytes(), f"{path.name} (in {shown(d)})"))
    return ("<h2 id=\"figures\">Figures</h2>" + "".join(parts)
            + "".join(f'<p class="note">{esc(n)}</p>' for n in notes))


def spec_figures(spec, directory: Path, pngs: list[Path], draw) -> tuple[list[str], list[tuple[Path, str]]]:
    """The figures ``spec`` declares (``figures:``, written by ``rfbench plot --spec``) whose PNG is
    in its results ``directory``, each drawn again through ``draw`` from the figures.csv beside it by
    the code that drew the PNG (:func:`rfbench.reporting.plot.spec_figure`): (their markup, [(each
    PNG not drawn, why)])."""
    declared = {}
    if spec is not None and spec.results is not None and Path(directory).resolve() == Path(spec.results).resolve():
        try:
            fs = plot.figure_spec(spec)
            declared = {f"{p['file']}.png": p for p in fs.plots}
        except UsageError:
            declared = {}
    data_file = Path(directory) / plot.FIGURE_DATA
    parts, left = [], []
    data = pd.read_csv(data_file) if declared and data_file.is_file() else None
    for png in pngs:
        p = declared.get(png.name)
        if p is None:
            left.append((png, "no spec declares it as a figure: no data to draw it from"))
        elif data is None:
            left.append((png, f"no {plot.FIGURE_DATA} beside it to draw it from"))
        else:
            caption = (f"{p['file']}: {FIGURE_CAPTIONS.get(p['kind'], p['kind'])}, drawn from {plot.FIGURE_DATA} "
                       f"(in {shown(directory)}) as rfbench plot --spec {spec.name} draws {png.name}")
            try:
                parts.append(draw(p["kind"], plot.spec_figure(data, fs, p), data, caption))
            except (UsageError, KeyError, ValueError) as exc:
                left.append((png, f"{plot.FIGURE_DATA} could not be drawn: {exc}"))
    return parts, left


def gp_figures_section(results: pd.DataFrame, registry: Registry, alpha: float = 0.05,
                       draw=png_figure, time: timing.TimeMeasure = timing.WALL) -> str:
    """The figures of the gp layout (rfbench.reporting.gp_table.figures): the critical-difference diagram
    per n, error against wall time (``time``: or the seconds it names) per size group; a figure with
    nothing to draw is one line saying why."""
    figs, notes = gp_table.figures(results, registry, alpha, time)
    drawn = [draw("cd" if caption.startswith("Critical") else "pareto", fig, results, caption) for caption, fig in figs]
    return ("<h2 id=\"figures\">Figures</h2>" + "".join(drawn)
            + "".join(f'<p class="note">{esc(n)}</p>' for n in notes))


STATUS_CLASS = {"pass": "b-pass", "fail": "b-fail"}


def _reason_cell(r: dict) -> str:
    """A check row's reason as the site shows it: the sentence, the command that shows it and the committed
    results file it reads (a failing cell), or why it is not judged (not comparable); empty otherwise."""
    text = r.get("reason")
    if not isinstance(text, str) or not text:
        return ""
    command = r.get("reason_command")
    if not isinstance(command, str) or not command:
        return text
    return (("" if r.get("reason_measured", True) else "unmeasured: ") + text
            + f" (shown by: {command}; results: {r.get('reason_results', '')})")


def check_section(spec, results: pd.DataFrame, methods=None, datasets=None, *, registry: Registry,
                  full_text: bool = True) -> str:
    """The check against the published table: counts, one row per cell, the full text folded
    (only the cells of ``methods`` and ``datasets`` when given, as ``rfbench check --methods``;
    ``full_text=False``: the table only, as the pages of ``rfbench publish``)."""
    if full_text or methods is not None or datasets is not None:
        table, text, _ = reproduce.check_text(spec, results, methods, datasets, registry=registry)
    else:                   # the cells only: the rank views and claims of the text are not drawn
        table, text = check.compare(spec, results, registry), ""
    counts = check.paper_cells(table)["status"].value_counts()
    badges = "".join(f'<span class="badge {STATUS_CLASS.get(s, "b-other")}">{int(counts.get(s, 0))} {esc(s)}</span>'
                     for s in check.STATUSES if counts.get(s, 0) or s in ("pass", "fail"))
    cols = [c for c in ("dataset", "method", "n", "published", "reproduced", "folds", "diff_stds", "status", "reason")
            if c in table]
    rows, classes = [], []
    for r in table.to_dict("records"):
        rows.append([_reason_cell(r) if c == "reason" else "" if pd.isna(r[c]) else
                     (f"{r[c]:+.2f}" if c == "diff_stds" else r[c]) for c in cols])
        classes.append(r["status"].replace(" ", "-") + (" variant" if bool(r.get("variant", False)) else ""))
    column_classes = {cols.index(c): k for c, k in (("status", "status"), ("reason", "l")) if c in cols}
    body = simple_table(cols, rows, left=3, row_classes=classes, column_classes=column_classes or None)
    return (f'<h2 id="check">Check against the published table ({esc(spec.published)})</h2>'
            f"<p>{badges}</p>"
            f'<p class="note">variants (grey rows) are shown next to the paper\'s cells and not counted; '
            f"diff_stds = (reproduced − published) / published std.</p>{body}"
            + (f"<details><summary>the full check (rfbench check)</summary><pre>{esc(text)}</pre></details>"
               if full_text else ""))


PROVENANCE_SHOWN = 10     # invocations listed before the rest are folded away


def _when(stamp) -> str:
    """'2026-11-23T20:40:57+00:00' → '2026-11-23 20:40 UTC' (other offsets kept as written)."""
    text = str(stamp or "")
    return text[:16].replace("T", " ") + " UTC" if text.endswith("+00:00") else text


def _machine(r: dict) -> str:
    m = r.get("machine") or {}
    return f"{m.get('cpu_count', '?')} cores, {m.get('memory_gb', '?')} GB, Python {m.get('python', '?')}"


def _packages(r: dict) -> str:
    versions = (r.get("machine") or {}).get("versions") or {}
    return ", ".join(f"{k} {v}" for k, v in versions.items() if v)


def _code(r: dict) -> str:
    code = r.get("code") or {}
    if not code.get("commit"):
        return f"rfbench {((r.get('machine') or {}).get('versions') or {}).get('rfbench', '?')} (no commit recorded)"
    return code["commit"][:12] + (" (uncommitted changes)" if code.get("dirty") else "")


def provenance_section(dirs: list[Path]) -> str:
    """Per directory: its invocations (runs.jsonl, else run.json), newest first: when, the command,
    the protocol, the code's commit; the machine and package versions once when every invocation
    shares them, else per row. Beyond the newest ten the list is folded."""
    parts = ['<h2 id="provenance">Provenance</h2>']
    for d in dirs:
        if sources.is_shipped(d):
            parts.append(_shipped_provenance(d))
            continue
        runs = sorted(invocations(d), key=lambda r: str(r.get("started_at", "")), reverse=True)
        if not runs:
            parts.append(f'<p class="note">{esc(shown(d))}: no runs.jsonl or run.json (records only)</p>')
            continue
        machines, packages = {_machine(r) for r in runs}, {_packages(r) for r in runs}
        header = ["started", "command", "protocol", "code"]
        header += ["machine"] if len(machines) > 1 else []
        header += ["packages"] if len(packages) > 1 else []
        rows = [[_when(r.get("started_at")), scrub(r.get("command", "")), r.get("protocol_key", ""), _code(r)]
                + ([_machine(r)] if len(machines) > 1 else []) + ([_packages(r)] if len(packages) > 1 else [])
                for r in runs]
        wrap = {1: "w"} | ({len(header) - 1: "w"} if "packages" in header else {})
        span = f"from {_when(runs[-1].get('started_at'))} to {_when(runs[0].get('started_at'))}" if len(runs) > 1 else ""
        parts.append(f"<h3>{esc(shown(d))}: {len(runs)} invocation(s) {esc(span)}</h3>")
        shared = ([f"machine: {machines.pop()}"] if len(machines) == 1 else []) + \
            ([f"packages: {packages.pop()}"] if len(packages) == 1 else [])
        parts += [f'<p class="note">{esc(line)}</p>' for line in shared]
        parts.append(simple_table(header, rows[:PROVENANCE_SHOWN], left=len(header), column_classes=wrap))
        if len(rows) > PROVENANCE_SHOWN:
            parts.append(f"<details><summary>{len(rows) - PROVENANCE_SHOWN} earlier invocation(s)</summary>"
                         + simple_table(header, rows[PROVENANCE_SHOWN:], left=len(header), column_classes=wrap)
                         + "</details>")
    return "".join(parts)


def _shipped_provenance(src) -> str:
    """A shipped baseline's provenance: the code versions and devices its rows record."""
    frame = src.baseline().frame
    code = frame["code"].fillna("(not recorded)").value_counts()
    device = frame["device"].fillna("cpu").value_counts()
    return (f"<h3>{esc(src)}: {len(frame)} task(s), read in place of {esc(shown(src.directory))} (no records there)"
            "</h3>"
            f'<p class="note">{esc("code: " + ", ".join(f"{k} ({v})" for k, v in code.items()))}</p>'
            f'<p class="note">{esc("device: " + ", ".join(f"{k} ({v})" for k, v in device.items()))}</p>')


def directory_page(dirs: list[Path], results: pd.DataFrame, report_html: str, spec=None,
                   figures: bool = True, check_results: pd.DataFrame | None = None, methods=None,
                   datasets=None, *, registry: Registry, layout: str = "default",
                   alpha: float = 0.05, check_text: bool = True, draw=png_figure,
                   time: timing.TimeMeasure = timing.WALL) -> str:
    """One page over the results of ``dirs``: title, the report (``report_html``: the fragment of
    ``report.render(..., "html", html_fragment=True)``, or of ``gp_table.render`` with ``layout="gp"``),
    figures (gp: :func:`gp_figures_section` at level ``alpha``), the check against ``spec``'s
    published table (on ``check_results``, default ``results``) when it has one (``check_text``: with
    the folded text of ``rfbench check`` under its table), provenance. ``draw``: the markup of one
    figure (:func:`png_figure`; ``rfbench publish`` passes SVG with tooltips). ``time``: which seconds
    ``results``' ``total_s`` holds (``rfbench report --time cpu``)."""
    title = spec.title if spec is not None else ", ".join(shown(d) for d in dirs)
    # the machine's own paths stay off the page: relative to the project (rfbench.reporting.shown_paths)
    sub = (f"spec {spec.name}; results in " if spec is not None else "results in ") + ", ".join(
        scrub(sources.describe_one(d.directory, d)) if sources.is_shipped(d) else shown(d) for d in dirs)
    has_check = spec is not None and bool(spec.published)
    nav = ['<a href="#table">Table</a>'] + (['<a href="#wilcoxon">Statistics</a>'] if layout != "gp" else [])
    nav += ['<a href="#figures">Figures</a>'] if figures else []
    nav += ['<a href="#check">Check</a>'] if has_check else []
    nav += ['<a href="#provenance">Provenance</a>']
    parts = [f"<h1>{esc(title)}</h1>", f'<p class="sub">{esc(sub)}</p>', "<nav>" + "".join(nav) + "</nav>",
             report_html]
    if figures:
        parts.append(gp_figures_section(results, registry, alpha, draw, time) if layout == "gp"
                     else figures_section(results, dirs, draw=draw, spec=spec, time=time))
    if has_check:
        parts.append(check_section(spec, results if check_results is None else check_results, methods, datasets,
                                   registry=registry, full_text=check_text))
    parts.append(provenance_section(dirs))
    return document(title, parts)


def spec_page(spec, figures: bool = True, *, registry: Registry, names: dict[str, str] | None = None,
              test: str | None = None, alpha: float = 0.05, layout: str | None = None,
              check_text: bool = True, draw=png_figure) -> tuple[str, str] | None:
    """(page, one-line summary) of a spec's results directory, as ``rfbench reproduce`` writes its
    report.md and check.txt from them; None before its first finished task. ``names``: display names
    of methods; ``test``: the t-test that bolds cells (default: the spec's own); ``alpha``: its level;
    ``layout``: the table's layout (default: the spec's own) (``rfbench report --all`` passes its
    options through); ``check_text``: the check's folded text under its table (``rfbench publish``
    leaves it out); ``draw``: as :func:`directory_page`'s. The results are those :mod:`rfbench.experiments.sources` resolves: a local
    results directory, else the shipped baseline."""
    results = reproduce.results_of(spec)
    done = results[results["status"] == "done"] if len(results) else results
    if done.empty:
        return None
    comparisons = [(w.a, w.n_a, w.b, w.n_b) for w in spec.wilcoxon
                   if w.n_a != w.n_b]
    layout = layout or spec.layout
    if layout == "gp":
        fragment = gp_table.render(done, "html", alpha, test or spec.test.name, names=names, html_fragment=True,
                                   registry=registry)
    else:
        fragment = report.render(done, "html", alpha, comparisons=comparisons, test=test or spec.test.name,
                                 names=names, html_fragment=True, registry=registry)
    dirs = [src for _, src in sources.of_spec(spec) if src is not None]
    page = directory_page(dirs, done, fragment, spec, figures, check_results=results, registry=registry,
                          layout=layout, alpha=alpha, check_text=check_text, draw=draw)
    if spec.published:
        summary = check.summary_line(check.compare(spec, results, registry))     # check_text's table
    elif spec.plan is not None:       # the tasks the spec asks for that are finished, as reproduce --list counts
        counts = reproduce.task_counts(spec, results, registry)
        summary = f"{counts['done']} of {counts['tasks']} tasks done (no published table)"
    else:
        summary = f"{len(done)} tasks done (no published table)"
    if dirs and sources.is_shipped(dirs[0]):
        summary += f" (from the {dirs[0]})"
    return page, summary


# -- every spec -------------------------------------------------------------------------------------------------------

def write_site(output: Path, page_of, specs) -> list[Path]:
    """index.html and ``<spec>.html`` for every spec whose results directory has finished tasks, into
    the directory ``output``. ``page_of(spec)`` returns (page, summary) where summary is one line
    (check counts or tasks done)."""
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise UsageError(f"--output {output} is a file; with --all give a directory for index.html and the pages")
    output.mkdir(parents=True, exist_ok=True)
    written, rows = [], []
    for spec in specs:
        made = page_of(spec)
        if made is None:
            rows.append([spec.name, "no finished task yet", spec.title])
            continue
        page, summary = made
        path = output / f"{spec.name}.html"
        atomic_write_text(path, page)
        written.append(path)
        rows.append([Markup(f'<a href="{attr(path.name)}">{esc(spec.name)}</a>'), summary, spec.title])
    index = document("rfbench: every spec", [
        "<h1>rfbench: every experiment spec</h1>",
        f'<p class="sub">{len(written)} page(s), one per spec with results: its tables, figures, the check '
        "against the published table and the provenance of its runs.</p>",
        simple_table(["spec", "check against the paper / tasks", "title"], rows, left=3, column_classes={2: "w"})])
    atomic_write_text(output / "index.html", index)
    return [output / "index.html", *written]
