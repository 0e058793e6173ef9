"""The figures of ``rfbench plot`` as inline SVG with the value under the pointer (the pages of
``rfbench publish``): each drawn point, marker or box gets an SVG ``<title>`` (the browser's
tooltip) naming its method, dataset, n and value. No script and no library: matplotlib's SVG
backend writes the figure, the artists to label are found by the ``gid`` set on them here, and the
titles are added to the SVG afterwards. The figures themselves are :mod:`rfbench.reporting.plot`'s,
unchanged; only which artist stands for which cell is worked out here, from the data they drew.

:func:`figure_html` is the entry point: (kind, figure, the data it drew, caption) → ``<figure>``.
"""

from __future__ import annotations

import hashlib
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd

from rfbench.reporting.html_markup import attr, esc

SVG = "http://www.w3.org/2000/svg"
XLINK = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG)
ET.register_namespace("xlink", XLINK)

def _fmt(v: float) -> str:
    return "" if v is None or not np.isfinite(v) else f"{v:.4g}"


def _finished(data: pd.DataFrame, timed: bool = False) -> pd.DataFrame:
    """The finished tasks a figure drew (``timed``: those with a positive wall time, as the time plots)."""
    done = data[data["status"] == "done"].copy()
    for c in ("n_features", "error", "total_s"):
        done[c] = pd.to_numeric(done[c], errors="coerce")
    if timed:
        done = done[np.isfinite(done["total_s"]) & (done["total_s"] > 0)]
    return done


def _tag(artist, tips: dict, text) -> None:
    """Give ``artist`` an id of this figure and remember its tooltip(s) (one text, or one per marker)."""
    gid = f"rfb{len(tips)}"
    artist.set_gid(gid)
    tips[gid] = text


# -- which artist is which cell, per kind of figure ---------------------------------------------------------------------

def _tips_pareto(fig, data: pd.DataFrame) -> dict:
    """Error against wall time: one scatter per (method, n) of a dataset's panel (its title)."""
    tips: dict = {}
    done = _finished(data, timed=True)
    for ax in fig.axes:
        g = done[done["dataset"].astype(str) == ax.get_title()].groupby(["method", "n_features"]).agg(
            err=("error", "mean"), t=("total_s", "mean"), tasks=("error", "size")).reset_index()
        for coll in ax.collections:
            xy = coll.get_offsets()
            if len(xy) != 1 or g.empty:
                continue
            x, y = float(xy[0][0]), float(xy[0][1])
            hit = g[np.isclose(g["t"], x, rtol=1e-9) & np.isclose(g["err"], y, rtol=1e-9)]
            if len(hit):
                r = hit.iloc[0]
                _tag(coll, tips, f"{r['method']}, {ax.get_title()}, n = {int(r['n_features'])}: error {_fmt(y)}, "
                                 f"{_fmt(x)} s per task (mean over {int(r['tasks'])} tasks)")
    return tips


def _tips_error_vs_n(fig, data: pd.DataFrame) -> dict:
    """Error against n: one error-bar line per method in a dataset's panel, a marker per n."""
    tips: dict = {}
    done = _finished(data)
    for ax in fig.axes:
        ds = ax.get_title()
        for container in ax.containers:
            method = container.get_label()
            s = done[(done["dataset"].astype(str) == ds) & (done["method"] == method)].groupby("n_features")[
                "error"].agg(["mean", "std", "size"])
            line = container.lines[0]
            if line is None or len(s) != len(line.get_xdata()):
                continue
            _tag(line, tips, [f"{method}, {ds}, n = {int(n)}: error {_fmt(r['mean'])} ± {_fmt(r['std'])} "
                              f"({int(r['size'])} folds)" for n, r in s.iterrows()])
    return tips


def _tips_walltime(fig, data: pd.DataFrame) -> dict:
    """Wall time: a box per (method, n) in the order drawn; the fold points are rasterised (thousands
    of them would make the SVG heavy) and carry no tooltip."""
    from matplotlib.patches import PathPatch

    tips: dict = {}
    done = _finished(data, timed=True)
    cells = [(m, n, g["total_s"].to_numpy(float), g["dataset"].nunique())
             for m in sorted(done["method"].unique()) for n in sorted(done["n_features"].unique())
             if len(g := done[(done["method"] == m) & (done["n_features"] == n)])]
    for ax in fig.axes:
        for coll in ax.collections:
            coll.set_rasterized(True)
        boxes = [p for p in ax.patches if isinstance(p, PathPatch)]
        if len(boxes) != len(cells):
            continue
        for box, (m, n, t, n_ds) in zip(boxes, cells, strict=True):
            _tag(box, tips, f"{m}, n = {int(n)}: median {_fmt(float(np.median(t)))} s per task "
                            f"({len(t)} tasks on {n_ds} datasets; range {_fmt(t.min())}–{_fmt(t.max())} s)")
    return tips


_RANK_LABEL = re.compile(r"^(?:(?P<a>.+) \((?P<r1>\d+\.\d+)\)|\((?P<r2>\d+\.\d+)\) (?P<b>.+))$")


def _tips_cd(fig, data: pd.DataFrame) -> dict:
    """Critical-difference diagram: a marker per method at its average rank, and its label."""
    tips: dict = {}
    for ax in fig.axes:
        head = re.search(r"n = (\d+), N = (\d+) datasets", ax.get_title())
        where = f"n = {head.group(1)}, over {head.group(2)} datasets" if head else ""
        by_rank: dict[str, list[str]] = {}
        for text in ax.texts:
            m = _RANK_LABEL.match(text.get_text())
            if m:
                method, rank = m.group("a") or m.group("b"), m.group("r1") or m.group("r2")
                by_rank.setdefault(rank, []).append(method)
                _tag(text, tips, f"{method}: average rank {rank} ({where})")
        for coll in ax.collections:
            xy = coll.get_offsets()
            if len(xy) == 1 and (names := by_rank.get(f"{float(xy[0][0]):.2f}")):
                _tag(coll, tips, f"{', '.join(names)}: average rank {float(xy[0][0]):.2f} ({where})")
    return tips


def rank_time_tips(ranks: pd.Series, seconds: pd.Series, where: str):
    """The tooltips of :func:`rfbench.reporting.plot.rank_against_time`: a point per method with a
    positive time, in the order of ``ranks``."""
    def tips_of(fig, _data) -> dict:
        tips: dict = {}
        shown = [m for m in ranks.index if np.isfinite(float(seconds.get(m, np.nan))) and seconds.get(m) > 0]
        colls = fig.axes[0].collections
        if len(colls) == len(shown):
            for coll, m in zip(colls, shown, strict=True):
                _tag(coll, tips, f"{m}, {where}: average rank {ranks[m]:.2f}, median {_fmt(float(seconds[m]))} s "
                                 "per task")
        return tips
    return tips_of


def _spec_tips(x: str):
    """A spec's own figures (:func:`rfbench.reporting.plot.spec_figure`, the EERF paper's Figs. 1-3)
    drawn from the rows of figures.csv: one error-bar line per (method, ours / variant / published)
    in a dataset's panel (its title), a marker per M. The method is the line's colour, each marker
    the row of that panel and method at its error and x (``x``: M or time_s; the published stars of
    one M are dodged by at most 5 %, hence the tolerance on x)."""
    from matplotlib.colors import to_hex

    from rfbench.reporting import plot

    def tips_of(fig, data: pd.DataFrame) -> dict:
        tips: dict = {}
        data = data.copy()
        for c in ("M", "error", "se", "time_s", "repeats"):
            data[c] = pd.to_numeric(data[c], errors="coerce")
        source = data["source"].astype(str)
        by_colour = {to_hex(c): m for m, c in plot.PAPER_COLORS.items()}
        for ax in fig.axes:
            panel = data[data["dataset"].astype(str) == ax.get_title()]
            for container in ax.containers:
                line = container.lines[0]
                if line is None or panel.empty:
                    continue
                method = by_colour.get(to_hex(line.get_color()))
                rows = panel if method is None else panel[panel["method"] == method]
                src = source[rows.index]
                rows = (rows[~src.str.startswith("rfbench")] if line.get_marker() == "*"
                        else rows[src.str.startswith("rfbench: ")] if line.get_linestyle() == "--"
                        else rows[src == "rfbench"])
                texts = []
                for xv, yv in zip(line.get_xdata(), line.get_ydata(), strict=True):
                    hit = rows[np.isclose(rows["error"], float(yv), rtol=1e-9)
                               & np.isclose(rows[x], float(xv), rtol=0.06)]
                    if len(hit) != 1:
                        break
                    texts.append(_spec_tip(hit.iloc[0]))
                else:
                    if texts:
                        _tag(line, tips, texts)
        return tips
    return tips_of


def _spec_tip(r) -> str:
    where = f"{r['method']}, {r['dataset']}, M = {int(r['M'])}"
    se = f" ± {_fmt(r['se'])} s.e." if np.isfinite(r["se"]) else ""
    if str(r["source"]).startswith("rfbench"):
        variant = str(r["source"])[len("rfbench: "):].replace(" (dashed)", "") if str(r["source"]) != "rfbench" else ""
        repeats = f" over {int(r['repeats'])} repeats" if np.isfinite(r["repeats"]) else ""
        return (f"{where}{' — ' + variant if variant else ''}: error {_fmt(r['error'])} %{se}{repeats}, "
                f"median {_fmt(r['time_s'])} s per repeat")
    table = re.sub(r"^published \((.*)\)$", r"\1", str(r["source"]))
    return f"{where}: published error {_fmt(r['error'])} %{se}, {_fmt(r['time_s'])} s on the paper's machine ({table})"


TIPS = {"pareto": _tips_pareto, "error-vs-n": _tips_error_vs_n, "walltime": _tips_walltime, "cd": _tips_cd,
        "error-vs-m": _spec_tips("M"), "error-vs-time": _spec_tips("time_s")}


# -- the SVG ------------------------------------------------------------------------------------------------------------

def _add_titles(svg: str, tips: dict) -> str:
    """The SVG with a ``<title>`` in each tagged group (one text) or in each of its markers (a list,
    matched to the markers in the order drawn: matplotlib writes one ``<use>`` per data point)."""
    root = ET.fromstring(svg)
    for g in root.iter(f"{{{SVG}}}g"):
        text = tips.get(g.get("id"))
        if text is None:
            continue
        if isinstance(text, str):
            targets, texts = [g], [text]
        else:
            targets = list(g.iter(f"{{{SVG}}}use"))
            texts = text if len(targets) == len(text) else [" | ".join(text)]
            targets = targets if len(targets) == len(text) else [g]
        for el, t in zip(targets, texts, strict=True):
            title = ET.Element(f"{{{SVG}}}title")
            title.text = t
            el.insert(0, title)
    return ET.tostring(root, encoding="unicode")


def _own_ids(svg: str, prefix: str) -> str:
    """Every id of the SVG (and each reference to one) prefixed: several figures share a page."""
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', svg)
    svg = re.sub(r'url\(#([^)]+)\)', lambda m: f"url(#{prefix}{m.group(1)})", svg)
    return re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m.group(1)}"', svg)


def _steady(fig) -> None:
    """Lines whose points came in no fixed order (scikit-posthocs joins the methods of a thick bar
    of the critical-difference diagram in the order of a set of names, which varies with Python's
    string hashing from one process to the next): a solid horizontal line without markers gets its
    points sorted by x. The same segment is drawn, and the SVG path is the same bytes in every run."""
    for ax in fig.axes:
        for line in ax.lines:
            x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
            if (len(x) >= 2 and len(y) == len(x) and np.all(y == y[0]) and line.get_linestyle() == "-"
                    and line.get_marker() in ("None", "", None, " ")):
                line.set_xdata(np.sort(x))


def svg_markup(fig, tips_of=None, data: pd.DataFrame | None = None) -> str:
    """The figure as inline SVG (text as text, scaled to its box), tooltips from ``tips_of(fig,
    data)`` → {gid: text or [text per marker]}; the figure is closed afterwards."""
    import matplotlib
    from matplotlib import pyplot

    tips = tips_of(fig, data) if tips_of is not None else {}
    _steady(fig)
    buf = io.StringIO()
    # text as text (smaller, searchable); a fixed salt and no metadata: the same figure, the same bytes
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "rfbench"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.15,
                    metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    pyplot.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]                       # no XML declaration or doctype inside HTML
    svg = _add_titles(svg, tips)
    # ids of its own (several inline SVGs share a page), from its bytes: the same figure, the same ids,
    # whichever process draws it in whatever order
    svg = _own_ids(svg, f"f{hashlib.sha1(svg.encode()).hexdigest()[:10]}-")
    # the box's width scales it (viewBox kept): the figure fills its column, as the PNGs did
    return re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r'<svg\1 width="100%" role="img"', svg, count=1)


def figure_html(kind: str, fig, data: pd.DataFrame | None, caption: str, tips_of=None) -> str:
    """``<figure>``: the figure of ``kind`` (a kind of rfbench plot, else ``tips_of`` or no tooltips)
    as inline SVG, and its caption."""
    svg = svg_markup(fig, tips_of or TIPS.get(kind), data)
    return f'<figure aria-label="{attr(caption)}">{svg}<figcaption>{esc(caption)}</figcaption></figure>'
