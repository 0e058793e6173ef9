"""The site's figures (rfbench publish, docs/site.md): a spec's own figures (bench/eerf2018-figures.yaml,
written as PNG by `rfbench plot --spec`) are drawn again as inline SVG from the figures.csv beside them,
with the row's value under the pointer; a PNG with no such data stays the PNG, with a note; and the
same figure gives the same bytes, whichever process draws it and in whatever order."""

import dataclasses
import html
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from rfbench.experiments import html_page
from rfbench.experiments.spec import all_specs
from rfbench.registry import load as load_registry
from rfbench.reporting import plot, svg_figures

ROOT = Path(__file__).resolve().parents[2]


def tooltips(markup: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<title>([^<]*)</title>", markup)]


@pytest.fixture(scope="module")
def eerf_spec():
    spec = next(s for s in all_specs(load_registry()) if s.name == "eerf2018-figures")
    if not (Path(spec.results) / plot.FIGURE_DATA).is_file():
        pytest.skip(f"no {plot.FIGURE_DATA} in {spec.results}")
    return spec


def _results() -> pd.DataFrame:      # nothing for rfbench plot's own kinds: the section holds the spec's figures
    return pd.DataFrame(columns=["dataset", "method", "n_features", "fold", "seed", "status", "metric", "error",
                                 "total_s"])


def test_the_spec_figures_are_svg_with_the_values_of_figures_csv_under_the_pointer(eerf_spec):
    directory = Path(eerf_spec.results)
    section = html_page.figures_section(_results(), [directory], draw=svg_figures.figure_html, spec=eerf_spec)
    assert "<img" not in section and section.count("<svg") == 2                    # error-vs-m and error-vs-time
    for svg in re.findall(r"<svg.*?</svg>", section, re.S):
        ET.fromstring(svg)                                                           # well-formed inline SVG
    assert "drawn from figures.csv" in section
    tips = tooltips(section)
    data = pd.read_csv(directory / plot.FIGURE_DATA)
    ours = data[data["source"] == "rfbench"].iloc[0]
    want = (f"{ours['method']}, {ours['dataset']}, M = {int(ours['M'])}: error {ours['error']:.4g} % "
            f"± {ours['se']:.4g} s.e. over {int(ours['repeats'])} repeats, median {ours['time_s']:.4g} s per repeat")
    assert want in tips
    pub = data[data["source"].str.startswith("published")].iloc[0]
    assert any(t.startswith(f"{pub['method']}, {pub['dataset']}, M = {int(pub['M'])}: published error "
                            f"{pub['error']:.4g} %") for t in tips)
    # every point of figures.csv has its marker in error-vs-m (the first figure)
    first = re.search(r"<svg.*?</svg>", section, re.S).group(0)
    assert len(tooltips(first)) == len(data)


def test_a_spec_png_without_its_data_stays_a_png_with_a_note(eerf_spec, tmp_path):
    shutil.copy(Path(eerf_spec.results) / "error-vs-m.png", tmp_path / "error-vs-m.png")
    spec = dataclasses.replace(eerf_spec, results=tmp_path)
    section = html_page.figures_section(_results(), [tmp_path], draw=svg_figures.figure_html, spec=spec)
    assert section.count('<img alt="error-vs-m.png') == 1 and "<svg" not in section
    assert "error-vs-m.png (in " in section and "shown as the PNG file, without tooltips (no figures.csv beside it to draw it from)" in section
    # the single page of report --format html keeps the committed PNG files
    own = html_page.figures_section(_results(), [Path(eerf_spec.results)], spec=eerf_spec)
    assert own.count("<img") == 2 and "<svg" not in own


_DRAW = """
import hashlib, sys
import pandas as pd
from rfbench.experiments import html_page
from rfbench.experiments.spec import all_specs
from rfbench.registry import load as load_registry
from rfbench.reporting import plot, svg_figures
spec = next(s for s in all_specs(load_registry()) if s.name == "eerf2018-figures")
# close errors on eight datasets: the critical-difference diagram joins the methods by thick bars
rows = [(ds, m, n, f, 0, "done", "mse", 1 + ((3 * i + 5 * k) % 7) / 20 + f / 10 + 1 / n, 1.0 + k + n / 100 + f / 7)
        for i, ds in enumerate("abcdefgh") for k, m in enumerate(("p", "q", "r", "s", "t")) for n in (10, 100)
        for f in range(4)]
df = pd.DataFrame(rows, columns=["dataset", "method", "n_features", "fold", "seed", "status", "metric", "error",
                                 "total_s"])
order = sys.argv[1:]
parts = {"walltime": lambda: svg_figures.figure_html("walltime", plot.walltime_figure(df), df, "w"),
         "pareto": lambda: svg_figures.figure_html("pareto", plot.pareto_figure(df), df, "p"),
         "cd": lambda: "".join(svg_figures.figure_html("cd", f, df, "c") for _, f in plot.figures(df, "cd")[0]),
         "spec": lambda: html_page.figures_section(df.iloc[:0], [spec.results], draw=svg_figures.figure_html,
                                                   spec=spec)}
if "unsteady" in order:                           # (to see the test fail without the sorted bars)
    svg_figures._steady = lambda fig: None
out = {k: parts[k]() for k in order if k in parts}
print(hashlib.sha256("".join(out[k] for k in sorted(out)).encode()).hexdigest())
"""


@pytest.mark.slow
def test_the_same_figures_are_the_same_bytes_in_any_process_and_order(eerf_spec):
    def draw(seed: str, *order: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", _DRAW, *order], capture_output=True, text=True, env=env,
                             cwd=ROOT, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert draw("1", "walltime", "pareto", "cd", "spec") == draw("2", "spec", "cd", "pareto", "walltime")
