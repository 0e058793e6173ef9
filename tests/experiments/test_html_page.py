"""rfbench report --format html: one self-contained page (tables with the significance marks,
figures as data URIs, provenance, escaped text, no external URL), the index over every spec, and
the page as a real browser draws it (Chromium headless, skipped when none is installed)."""

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rfbench.errors import UsageError
from rfbench.experiments import html_page
from rfbench.registry import load as load_registry
from rfbench.reporting import report
from rfbench.store import RunDir
from tests.browser import chromium
from tests.records import as_record
from tests.reporting.test_cells import frame

HOSTILE = 'm<script>alert("x")</script>&'          # a display name that must stay text


def write_dir(path: Path, df) -> Path:
    run = RunDir(path).ensure()
    run.write_run_info({"command": "rfbench run --methods a,b <&> --out x", "started_at": "2026-11-27T10:00:00+00:00",
                        "protocol_key": "cv-o10-i5", "code": {"commit": "0123456789abcdef0123", "dirty": True},
                        "machine": {"cpu_count": 2, "memory_gb": 23.5, "python": "3.11.7",
                                    "versions": {"rfbench": "0.1.0", "numpy": "2.4.6"}}})
    for rec in df.to_dict("records"):
        run.write_record(as_record(rec))
    run.write_results_csv()
    return path


def external_urls(page: str) -> list[str]:
    """Every src/href that leaves the page (anything but a data URI, an anchor or a sibling page)."""
    links = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page)
    return [u for u in links if not (u.startswith(("data:image/png;base64,", "#")) or re.fullmatch(r"[\w.-]+\.html", u))]


def test_report_page_has_the_tables_marks_and_escapes_every_name():
    df = frame(ns=(100, 500))
    page = report.render(df, "html", names={"a": HOSTILE}, registry=load_registry())
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<table") == 3                            # n = 100, n = 500, Wilcoxon
    assert "<h3>n = 100</h3>" in page and "<h3>n = 500</h3>" in page
    # the bold and shaded cells are exactly the ones the t-tests mark, in table order
    best = re.findall(r'<td class="g best"><b>([\d.]+)</b>', page)
    cells, _, _ = report.summarise(df)
    marked = [f"{cells[(d, n, m)].mean:.2f}" for n in (100, 500) for d in sorted({k[0] for k in cells}, key=list(
        df["dataset"].unique()).index) for m in "abc" if cells[(d, n, m)].bold]
    assert len(best) >= 8 and sorted(best) == sorted(marked)
    assert "<script>" not in page and "&lt;script&gt;alert(\"x\")&lt;/script&gt;&amp;" in page
    assert "<script" not in page.lower() and not external_urls(page)


def test_a_screen_page_says_so_and_marks_the_screen_rows():
    page = report.render(frame(folds=range(3)), "html", registry=load_registry())
    assert '<p class="banner"><b>Screen: folds 0-2 of 10 (not the full protocol)</b>' in page
    assert page.count("Screen: folds 0-2 of 10") == 1                     # the banner, not the caption again
    assert 'class="banner"' not in report.render(frame(), "html", registry=load_registry())
    assert page.count('<tr class="screen">') == 3 and '<span class="partial"' in page


@pytest.mark.slow
def test_directory_page_embeds_figures_and_provenance(tmp_path):
    d = write_dir(tmp_path / "run", frame(ns=(100, 500)))
    out = subprocess.run([sys.executable, "-m", "rfbench.cli", "report", str(d), "--format", "html",
                          "--output", str(tmp_path / "page.html")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "page.html").read_text()
    images = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert {alt.split(",")[0] for alt, _ in images} >= {"Critical-difference diagram",
                                                         "Error against the number of features", "Wall time per task"}
    import base64
    assert all(base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n" for _, data in images)
    assert not external_urls(page) and "<script" not in page
    for section in ("table", "wilcoxon", "figures", "provenance"):
        assert f'id="{section}"' in page and f'href="#{section}"' in page
    assert 'id="check"' not in page                              # no spec owns this directory
    assert "rfbench run --methods a,b &lt;&amp;&gt; --out x" in page     # the command, escaped
    assert "0123456789ab (uncommitted changes)" in page and "2 cores, 23.5 GB" in page


@pytest.mark.slow
def test_filters_reach_the_page_and_stdout_is_the_default(tmp_path):
    d = write_dir(tmp_path / "run", frame())
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run([sys.executable, "-m", "rfbench.cli", "report", str(d), "--format", "html", "--methods", "a,b"],
                         capture_output=True, text=True, cwd=work)
    assert out.returncode == 0 and out.stdout.startswith("<!DOCTYPE html>")
    assert ">a</th>" in out.stdout and ">c</th>" not in out.stdout
    assert list(work.iterdir()) == []                 # no file where the user did not point


def test_site_has_an_index_linking_every_page(tmp_path):
    specs = [SimpleNamespace(name="one", title="First <table>"), SimpleNamespace(name="two", title="Second")]

    def page_of(spec):
        return None if spec.name == "two" else (html_page.document(spec.title, ["<p>x</p>"]), "3 pass, 1 fail")

    written = html_page.write_site(tmp_path / "site", page_of, specs)
    assert [p.name for p in written] == ["index.html", "one.html"]
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'href="one.html">one</a>' in index and "two.html" not in index and "no finished task yet" in index
    assert "First &lt;table&gt;" in index and "3 pass, 1 fail" in index and not external_urls(index)
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="is a file"):
        html_page.write_site(tmp_path / "file", page_of, specs)


@pytest.mark.parametrize("args, message", [
    (["--all"], "--all writes a page per spec: give --format html --output DIR"),
    (["--all", "--format", "html"], "--all writes a page per spec"),
    ([], "give the results directories to report"),
])
def test_report_usage_errors_are_one_line(args, message):
    out = subprocess.run([sys.executable, "-m", "rfbench.cli", "report", *args], capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and message in out.stderr


def test_report_all_passes_names_test_and_alpha_to_every_page(tmp_path, monkeypatch, capsys):
    """--names, --test and --alpha reach each spec's page as they reach `report DIR`'s; --compare and
    --protocol (one run's cells and records) are refused in one line, never ignored."""
    from cli_errors import one_line_error

    from rfbench.cli import main
    from rfbench.experiments import spec as spec_mod

    one = spec_mod.load_spec("salsa2016-table1", load_registry())
    if html_page.reproduce.results_of(one).empty:
        pytest.skip("no committed results for salsa2016-table1")
    monkeypatch.setattr(spec_mod, "all_specs", lambda registry=None: [one])
    site = tmp_path / "site"
    main(["report", "--all", "--format", "html", "--output", str(site)])
    plain = (site / "salsa2016-table1.html").read_text()
    assert ">SALSA<" not in plain and "Welch" in plain
    main(["report", "--all", "--format", "html", "--output", str(site), "--names", "salsa=SALSA,krr=KRR",
          "--test", "paired", "--alpha", "0.01"])
    page = (site / "salsa2016-table1.html").read_text()
    tables = page.split('id="check"')[0]           # the check lists registered names, as `report DIR`'s does
    assert ">SALSA<" in tables and ">KRR<" in tables and ">salsa<" not in tables
    assert page != plain and "paired" in page and "0.01" in page
    capsys.readouterr()
    for extra, message in [(["--compare", "salsa@100:krr@100"], "--compare names cells of one run"),
                           (["--protocol", "holdout"], "--protocol selects one run's records")]:
        one_line_error(capsys, ["report", "--all", "--format", "html", "--output", str(site), *extra], message)


@pytest.mark.slow
def test_the_page_draws_in_a_headless_browser(tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium binary (apt install chromium-headless-shell)")
    import matplotlib.image as mpimg

    d = write_dir(tmp_path / "run", frame(ns=(100, 500)))
    subprocess.run([sys.executable, "-m", "rfbench.cli", "report", str(d), "--format", "html",
                    "--output", str(tmp_path / "page.html")], check=True, capture_output=True)
    shot = tmp_path / "page.png"
    subprocess.run([browser, "--no-sandbox", "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,2000",
                    (tmp_path / "page.html").as_uri()], check=True, capture_output=True, timeout=120)
    pixels = mpimg.imread(shot)
    assert pixels.shape[:2] == (2000, 1280)
    gray = pixels[..., :3].mean(axis=2)
    assert gray.std() > 0.05                                # not blank: text, tables and figures drawn
    assert (gray < 0.5).mean() > 0.005                      # some dark ink (text) ...
    assert (np.abs(pixels[..., 1] - pixels[..., 0]) > 0.05).any()      # ... and colour (the shaded marks, figures)


def test_wide_tables_are_split_into_blocks_of_whole_methods():
    methods = tuple((f"m{i}", 0.1 * i) for i in range(7))
    page = report.render(frame(methods=methods), "html", registry=load_registry())
    assert page.count("<h3>n = 100</h3>") == 1 and page.count("<h3>n = 100 (continued)</h3>") == 1
    first, second = page.split("<h3>n = 100 (continued)</h3>")
    assert [f">m{i}</th>" in first for i in range(7)] == [True] * 4 + [False] * 3       # 4 + 3, as even as possible
    assert all(f">m{i}</th>" in second for i in range(4, 7)) and ">m0</th>" not in second.split("Wilcoxon")[0]


def test_provenance_lists_the_newest_runs_and_folds_the_rest(tmp_path):
    import json

    runs = [{"command": f"rfbench run --folds {i}", "started_at": f"2026-11-{10 + i:02d}T08:00:00+00:00",
             "protocol_key": "cv-o10-i5", "code": {"commit": f"{i:02d}" * 20, "dirty": False},
             "machine": {"cpu_count": 2 if i < 11 else 16, "memory_gb": 23.5, "python": "3.11.7",
                         "versions": {"numpy": "2.4.6"}}} for i in range(12)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    section = html_page.provenance_section([tmp_path])
    shown, folded = section.split("<details>")
    assert "12 invocation(s) from 2026-11-10 08:00 UTC to 2026-11-21 08:00 UTC" in shown
    assert shown.index("--folds 11") < shown.index("--folds 2") and "--folds 1<" not in shown   # newest first
    assert "2 earlier invocation(s)" in folded and "--folds 0<" in folded and "--folds 1<" in folded
    assert "<th class=\"l\">machine</th>" in shown and "16 cores" in shown       # machines differ: a column
    assert "packages: numpy 2.4.6" in shown and "<th class=\"l\">packages</th>" not in shown   # shared: once


def test_check_section_is_the_check_table_row_for_row():
    from rfbench.experiments import check, reproduce
    from rfbench.experiments.spec import load_spec

    spec = load_spec("salsa2016-table1", load_registry())
    results = reproduce.results_of(spec)
    if results.empty:
        pytest.skip("no committed results for salsa2016-table1")
    section = html_page.check_section(spec, results, registry=load_registry())
    table = check.compare(spec, results, load_registry())
    rows = re.findall(r'<tr class="([a-z -]+)">', section)
    assert [r.removesuffix(" variant").replace("-", " ") for r in rows] == list(table["status"])
    assert [r.endswith(" variant") for r in rows] == [bool(v) for v in table["variant"]]
    counts = check.paper_cells(table)["status"].value_counts()
    assert f'<span class="badge b-pass">{counts.get("pass", 0)} pass</span>' in section
    assert f'<span class="badge b-fail">{counts.get("fail", 0)} fail</span>' in section
    assert "<details><summary>the full check (rfbench check)</summary><pre>check salsa2016-table1" in section
