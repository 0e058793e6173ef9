"""Self-contained HTML pages (``rfbench report --format html``): plain HTML with a little inline
CSS, figures as PNG data URIs, no script and no external URL, so one file can be mailed or opened
offline. Every text is escaped (:func:`esc`, :func:`attr`); only the fragments built here are trusted markup.

* :func:`document` wraps fragments into a page;
* :func:`directory_page` is one results directory: the report's tables with their significance
  marks, the figures of ``rfbench plot`` (and the PNGs a spec wrote into the directory), the check
  against the published table when the directory belongs to a spec, and the provenance of its runs
  (commands, code version, machine) from run.json / runs.jsonl;
* :func:`write_site` writes index.html and one such page per spec with results.
"""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1500px;
 padding:16px 28px 48px;color:#1d2330;line-height:1.45;font-size:14px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d6dae3;
 padding-bottom:3px}h3{font-size:14px;margin:18px 0 6px}
nav a{margin-right:14px}a{color:#1f5fbf}
.sub{color:#5b6475;margin:0 0 10px}
.banner{background:#fff4d6;border:1px solid #e8c66a;padding:8px 12px;border-radius:4px;margin:10px 0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 10px}
th,td{padding:3px 8px;border-bottom:1px solid #e3e6ec;text-align:right;white-space:nowrap}
th{background:#f2f4f8;font-weight:600;border-bottom:1px solid #c9ced8}
td.l,th.l{text-align:left}
td.w{white-space:normal;min-width:320px;text-align:left}
thead th{text-align:center}
td.best{background:#e2f2e2}
td.g,th.g{border-left:1px solid #d6dae3}
.partial{color:#a15c00;font-size:11px}
tr.screen td{background:#fff8e6}
tr.pass td.status{color:#176b2c;font-weight:600}tr.fail td.status{color:#b3261e;font-weight:600}
tr.partial td.status,tr.missing td.status{color:#7a6400}
tr.variant td{color:#6b7280}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;margin-right:6px;font-size:12.5px}
.b-pass{background:#dcefdc;color:#176b2c}.b-fail{background:#f6dcda;color:#b3261e}
.b-other{background:#eceef2;color:#3c4350}
figure{margin:10px 0 22px}figure img{max-width:100%;border:1px solid #e3e6ec}
figcaption{color:#5b6475;font-size:12.5px}
pre{background:#f6f7f9;border:1px solid #e3e6ec;padding:10px;overflow-x:auto;font-size:12px}
p.note{color:#5b6475;font-size:12.5px}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px}dt{font-weight:600}dd{margin:0}
"""


def esc(text) -> str:
    """Text as the content of an element (& < > escaped)."""
    return html.escape(str(text), quote=False)


def attr(text) -> str:
    """Text as an attribute value in double quotes (quotes escaped too)."""
    return html.escape(str(text), quote=True)


@dataclass(frozen=True)
class Markup:
    """A fragment of trusted HTML built here, passed through :func:`cell` unescaped."""
    html: str


def cell(value, classes: str = "") -> str:
    body = value.html if isinstance(value, Markup) else esc(value)
    return f'<td class="{classes}">{body}</td>' if classes else f"<td>{body}</td>"


def simple_table(header: list, rows: list[list], left: int = 1, row_classes: list[str] | None = None,
                 column_classes: dict[int, str] | None = None) -> str:
    """A table: the first ``left`` columns left-aligned (names), the rest right-aligned (numbers);
    ``row_classes`` one class per row, ``column_classes`` {column index: class}."""
    head = "".join(f'<th class="l">{esc(h)}</th>' if i < left else f"<th>{esc(h)}</th>" for i, h in enumerate(header))
    column_classes = column_classes or {}
    body = []
    for j, row in enumerate(rows):
        cls = f' class="{row_classes[j]}"' if row_classes and row_classes[j] else ""
        body.append(f"<tr{cls}>" + "".join(cell(v, " ".join(filter(None, ["l" if i < left else "",
                                                                            column_classes.get(i, "")])))
                                           for i, v in enumerate(row)) + "</tr>")
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>' + "".join(body)
            + "</tbody></table></div>")


def document(title: str, fragments: list[str]) -> str:
    """The page: doctype, UTF-8, the inline style, the fragments in order."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(fragments) + "\n</body></html>\n")


def png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def figure_png(fig, dpi: int = 110) -> bytes:
    """A matplotlib figure (made by rfbench.plot, on its Agg backend) as PNG bytes, closed afterwards."""
    from matplotlib import pyplot

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.15)
    pyplot.close(fig)
    return buf.getvalue()


def img(data: bytes, caption: str) -> str:
    return (f'<figure><img alt="{attr(caption)}" src="{png_uri(data)}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


# -- one results directory --------------------------------------------------------------------------------------------

FIGURE_CAPTIONS = {"cd": "Critical-difference diagram", "error-vs-n": "Error against the number of features",
                   "walltime": "Wall time per task", "pareto": "Error against wall time, Pareto front dashed"}


def figures_section(results: pd.DataFrame, dirs: list[Path]) -> str:
    """Every kind of ``rfbench plot`` that has something to draw, then the PNGs the directories hold
    (a spec's own figures); a kind with nothing to draw is one line saying why."""
    from rfbench import plot

    parts, notes = [], []
    for kind in plot.KINDS:
        try:
            figs, skipped = plot.figures(results, kind)
        except UsageError as exc:
            notes.append(f"{FIGURE_CAPTIONS[kind]}: not drawn ({exc})")
            continue
        notes += [f"{FIGURE_CAPTIONS[kind]}: {s}" for s in skipped]
        for n, fig in figs:
            parts.append(img(figure_png(fig), FIGURE_CAPTIONS[kind] + (f", n = {n}" if n is not None else "")))
    for d in dirs:
        for path in sorted(Path(d).glob("*.png")):
            parts.append(img(path.read_bytes(), f"{path.name} (in {d})"))
    return ("<h2 id=\"figures\">Figures</h2>" + "".join(parts)
            + "".join(f'<p class="note">{esc(n)}</p>' for n in notes))


STATUS_CLASS = {"pass": "b-pass", "fail": "b-fail"}


def check_section(spec, results: pd.DataFrame, methods=None, datasets=None) -> str:
    """The check against the published table: counts, one row per cell, the full text folded
    (only the cells of ``methods`` and ``datasets`` when given, as ``rfbench check --methods``)."""
    from rfbench import check, reproduce

    table, text, _ = reproduce.check_text(spec, results, methods, datasets)
    counts = check.paper_cells(table)["status"].value_counts()
    badges = "".join(f'<span class="badge {STATUS_CLASS.get(s, "b-other")}">{int(counts.get(s, 0))} {esc(s)}</span>'
                     for s in check.STATUSES if counts.get(s, 0) or s in ("pass", "fail"))
    cols = [c for c in ("dataset", "method", "n", "published", "reproduced", "folds", "diff_stds", "status")
            if c in table]
    rows, classes = [], []
    for r in table.to_dict("records"):
        rows.append(["" if pd.isna(r[c]) else (f"{r[c]:+.2f}" if c == "diff_stds" else r[c]) for c in cols])
        classes.append(r["status"].replace(" ", "-") + (" variant" if bool(r.get("variant", False)) else ""))
    body = simple_table(cols, rows, left=3, row_classes=classes,
                        column_classes={cols.index("status"): "status"} if "status" in cols else None)
    return (f'<h2 id="check">Check against the published table ({esc(spec.published)})</h2>'
            f"<p>{badges}</p>"
            f'<p class="note">variants (grey rows) are shown next to the paper\'s cells and not counted; '
            f"diff_stds = (reproduced − published) / published std.</p>{body}"
            f"<details><summary>the full check (rfbench check)</summary><pre>{esc(text)}</pre></details>")


def _invocations(directory: Path) -> list[dict]:
    path = Path(directory) / "runs.jsonl"
    if not path.is_file():
        info = Path(directory) / "run.json"
        return [json.loads(info.read_text())] if info.is_file() else []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


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
        runs = sorted(_invocations(d), key=lambda r: str(r.get("started_at", "")), reverse=True)
        if not runs:
            parts.append(f'<p class="note">{esc(d)}: no runs.jsonl or run.json (records only)</p>')
            continue
        machines, packages = {_machine(r) for r in runs}, {_packages(r) for r in runs}
        header = ["started", "command", "protocol", "code"]
        header += ["machine"] if len(machines) > 1 else []
        header += ["packages"] if len(packages) > 1 else []
        rows = [[_when(r.get("started_at")), r.get("command", ""), r.get("protocol_key", ""), _code(r)]
                + ([_machine(r)] if len(machines) > 1 else []) + ([_packages(r)] if len(packages) > 1 else [])
                for r in runs]
        wrap = {1: "w"} | ({len(header) - 1: "w"} if "packages" in header else {})
        span = f"from {_when(runs[-1].get('started_at'))} to {_when(runs[0].get('started_at'))}" if len(runs) > 1 else ""
        parts.append(f"<h3>{esc(d)}: {len(runs)} invocation(s) {esc(span)}</h3>")
        shared = ([f"machine: {machines.pop()}"] if len(machines) == 1 else []) + \
            ([f"packages: {packages.pop()}"] if len(packages) == 1 else [])
        parts += [f'<p class="note">{esc(line)}</p>' for line in shared]
        parts.append(simple_table(header, rows[:PROVENANCE_SHOWN], left=len(header), column_classes=wrap))
        if len(rows) > PROVENANCE_SHOWN:
            parts.append(f"<details><summary>{len(rows) - PROVENANCE_SHOWN} earlier invocation(s)</summary>"
                         + simple_table(header, rows[PROVENANCE_SHOWN:], left=len(header), column_classes=wrap)
                         + "</details>")
    return "".join(parts)


def directory_page(dirs: list[Path], results: pd.DataFrame, report_html: str, spec=None,
                   figures: bool = True, check_results: pd.DataFrame | None = None, methods=None,
                   datasets=None) -> str:
    """One page over the results of ``dirs``: title, the report (``report_html``: the fragment of
    ``report.render(..., "html", html_fragment=True)``), figures, the check against ``spec``'s
    published table (on ``check_results``, default ``results``) when it has one, provenance."""
    title = spec.title if spec is not None else ", ".join(str(d) for d in dirs)
    sub = (f"spec {spec.name}; results in " if spec is not None else "results in ") + ", ".join(str(d) for d in dirs)
    has_check = spec is not None and bool(spec.published)
    nav = ['<a href="#table">Table</a>', '<a href="#wilcoxon">Statistics</a>']
    nav += ['<a href="#figures">Figures</a>'] if figures else []
    nav += ['<a href="#check">Check</a>'] if has_check else []
    nav += ['<a href="#provenance">Provenance</a>']
    parts = [f"<h1>{esc(title)}</h1>", f'<p class="sub">{esc(sub)}</p>', "<nav>" + "".join(nav) + "</nav>",
             report_html]
    if figures:
        parts.append(figures_section(results, dirs))
    if has_check:
        parts.append(check_section(spec, results if check_results is None else check_results, methods, datasets))
    parts.append(provenance_section(dirs))
    return document(title, parts)


def spec_page(spec, figures: bool = True) -> tuple[str, str] | None:
    """(page, one-line summary) of a spec's results directory, as ``rfbench reproduce`` writes its
    report.md and check.txt from them; None before its first finished task."""
    from rfbench import check, report, reproduce

    results = reproduce.results_of(spec)
    done = results[results["status"] == "done"] if len(results) else results
    if done.empty:
        return None
    comparisons = [(w["a"], int(w["n_a"]), w["b"], int(w["n_b"])) for w in spec.wilcoxon
                   if int(w["n_a"]) != int(w["n_b"])]
    fragment = report.render(done, "html", comparisons=comparisons, test=spec.test, html_fragment=True)
    dirs = [d for d in spec.result_dirs() if (d / "records").is_dir()]
    page = directory_page(dirs, done, fragment, spec, figures, check_results=results)
    if spec.published:
        summary = check.summary_line(reproduce.check_text(spec, results)[0])
    else:
        summary = f"{len(done)} tasks done (no published table)"
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
    from rfbench.store import atomic_write_text

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
