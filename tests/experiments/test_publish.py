"""rfbench publish: the static site built from the shipped baselines (no
local results directory): every link resolves, every table has headers and a CSV beside its page
that holds its rows, the exports have the documented columns and one row per task, the command
refuses an --output it cannot use in one line, and the page works in a headless browser (its
self-test clicks a header and types a filter; screenshots are not blank)."""

import csv
import html
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from urllib.parse import unquote, urldefrag

import pandas as pd
import pytest
from click.testing import CliRunner

from rfbench.cli import cli, main
from rfbench.execution import runner
from rfbench.execution.runconfig import RunConfig
from rfbench.experiments import baselines, compare, publish, site_runs
from rfbench.experiments import spec as spec_mod
from rfbench.experiments.spec import all_specs
from rfbench.protocol import Protocol
from rfbench.registry import load as load_registry
from rfbench.reporting import pairwise, plot, shown_paths, site_markup, svg_figures
from tests.browser import chromium
from tests.cli_errors import one_line_error

GENERATED = ["breiman-generated", "friedman-generated"]      # no mirror needed
USER = "sklearn.linear_model:Ridge"


@pytest.fixture(scope="module")
def my_run(tmp_path_factory):
    """A user's comparison: Ridge on the outer folds of a small baseline (rff-gauss on the generated
    sets, 3 folds), as `rfbench compare run` writes it."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RFBENCH_REGISTRY", "")
    root = tmp_path_factory.mktemp("runs")
    try:
        runner.run(GENERATED, ["rff-gauss"], [10], Protocol(outer_folds=3, inner_folds=2, max_samples=300),
                   str(root / "base"), RunConfig(jobs=1), progress=False, registry=load_registry())
        compare.run(str(root / "base"), [USER], None, None, None, str(root / "mine"), RunConfig(jobs=1),
                    progress=False, registry=load_registry())
        yield root / "mine"
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def site(tmp_path_factory, my_run):
    """The site of the shipped baselines and one user's run, built once: an empty working directory,
    the packaged specs resolving their results as an installed wheel's do (no local results directory
    anywhere)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(spec_mod, "is_packaged", lambda path: True)
    mp.setenv("RFBENCH_CONFIG", "none")
    mp.setenv("RFBENCH_REGISTRY", "")
    mp.delenv("RFBENCH_RESULTS_ROOT", raising=False)
    cwd = tmp_path_factory.mktemp("empty")
    mp.chdir(cwd)
    out = tmp_path_factory.mktemp("site") / "site"
    try:
        result = CliRunner().invoke(cli, ["publish", "--output", str(out), "--quiet", "--runs", str(my_run)],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert sorted(p.name for p in cwd.iterdir()) == []            # nothing written where not pointed
        yield out
    finally:
        mp.undo()


def pages(site: Path) -> list[Path]:
    return sorted(site.glob("*.html"))


def local_links(page: Path) -> list[str]:
    return [unquote(u) for u in re.findall(r'(?:src|href)="([^"]*)"', page.read_text())
            if not u.startswith(("data:image/png;base64,", "#"))]


@pytest.mark.slow
def test_every_link_of_every_page_resolves_and_nothing_leaves_the_site(site):
    names = {p.name for p in pages(site)}
    assert {"index.html", "columns.html", "suite-uci.html", "suite-torgo.html"} <= names
    specs = all_specs(load_registry())
    assert {publish.spec_file(s.name) for s in specs} <= names
    index = (site / "index.html").read_text()
    for s in specs:                                     # every spec and suite is on the index
        assert publish.spec_file(s.name) in index
    for suite in ("uci", "torgo", "gfc", "salsa", "gbrff"):
        assert f">{suite}<" in index
    for page in pages(site):
        for url in local_links(page):
            assert "://" not in url and not url.startswith("//"), (page.name, url)
            target = site / urldefrag(url)[0]
            assert target.is_file(), f"{page.name} links to {url}, which is not there"
    dataset_pages = [p for p in names if p.startswith("dataset-")]
    method_pages = [p for p in names if p.startswith("method-")]
    assert len(dataset_pages) > 40 and len(method_pages) > 20


@pytest.mark.slow
def test_spec_pages_have_the_check_table_without_the_text_dump(site):
    page = (site / publish.spec_file("gfc2016-table1")).read_text()
    assert 'id="check"' in page and "the full check (rfbench check)" not in page
    assert len(page) < 1_500_000


@pytest.mark.slow
def test_every_table_has_headers_and_its_csv_holds_its_rows(site):
    tables = 0
    for page in pages(site):
        text = page.read_text()
        for k, m in enumerate(site_markup.TABLE.finditer(text), start=1):
            tables += 1
            table = m.group(0)
            assert "<th" in table.split("<tbody>")[0], f"{page.name}: table {k} has no header"
            name = f"{page.stem}.{k}.csv"
            assert f'href="{name}"' in text
            with open(site / name, newline="") as f:
                rows = list(csv.reader(f))
            header, body = site_markup.table_rows(table)
            assert rows[0] == header and all(h for h in header)
            assert rows[1:] == body
            assert len(body) == table.split("<tbody>")[-1].count("<tr")
    assert tables > 150


@pytest.mark.slow
def test_exports_have_the_documented_columns_and_one_row_per_task(site):
    columns_page = (site / "columns.html").read_text()
    for c in publish.EXPORT_COLUMNS:
        assert f"<td class=\"l\">{c}</td>" in columns_page
    for s in all_specs(load_registry()):
        shipped = [baselines.read_file(baselines.shipped_dir() / f"{d.name}.parquet").frame for d in s.result_dirs()
                   if (baselines.shipped_dir() / f"{d.name}.parquet").is_file()]
        pooled = pd.concat(shipped, ignore_index=True)
        pooled = pooled[pooled["protocol"] == s.protocol_key] if s.protocol_key else pooled
        # one row per task: the baseline's rows (a task of two directories once, as the spec's page counts it)
        expected = len(pooled.drop_duplicates(["dataset", "method", "n_features", "fold", "seed", "protocol"]))
        if len(shipped) == 1:                           # a spec reading its own directory only: every row
            assert expected == len(shipped[0]), s.name
        stem = site / "exports" / publish.safe_name(s.name)
        table = pd.read_csv(stem.with_suffix(".csv"))
        assert list(table.columns) == list(publish.EXPORT_COLUMNS)
        assert len(table) == expected and expected > 0, s.name
        assert not table.duplicated(["results", "dataset", "method", "n_features", "fold", "seed", "protocol"]).any()
        assert set(table["source"]) == {"baseline"} and set(table["spec"]) == {s.name}
        parquet = pd.read_parquet(stem.with_suffix(".parquet"))
        assert list(parquet.columns) == list(publish.EXPORT_COLUMNS) and len(parquet) == len(table)
    uci = pd.read_csv(site / "exports" / "suite-uci.csv")
    assert len(uci) == len(baselines.read_file(baselines.shipped_dir() / "uci-splits.parquet").frame)
    assert set(uci["device"].dropna()) <= {"cpu", "cuda"} and uci["error"].notna().any()


@pytest.mark.slow
def test_the_leaderboards_rank_and_draw(site):
    uci = (site / "suite-uci.html").read_text()
    assert "average rank" in uci and "wins vs" in uci and "Critical-difference diagram" in uci
    assert "Average rank against wall time" in uci and uci.count("<svg") >= 2 and 'src="data:image/png' not in uci
    torgo = (site / "suite-torgo.html").read_text()
    assert "gfc2016-table1" in torgo and "gfc2016-table4" in torgo and "average rank" in torgo


def test_publish_refuses_an_output_it_cannot_use(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    one_line_error(capsys, ["publish", "--output", str(tmp_path / "file")], "is a file, not a directory")
    one_line_error(capsys, ["publish", "--output", str(tmp_path / "missing" / "site")], "does not exist")
    one_line_error(capsys, ["publish", "--output", " "], "--output is empty")
    with pytest.raises(SystemExit) as exc:                 # --output is required
        main(["publish"])
    assert exc.value.code == 2 and "--output" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_csv_of_spanned_headers_names_every_column():
    table = ('<table><thead><tr><th rowspan="2">dataset</th><th colspan="2">gfc</th></tr>'
             "<tr><th>mean</th><th>std</th></tr></thead><tbody><tr><td>a</td><td>1</td><td>2</td></tr>"
             '<tr class="group"><th colspan="3">g</th></tr></tbody></table>')
    header, rows = site_markup.table_rows(table)
    assert header == ["dataset", "gfc mean", "std"] or header == ["dataset", "gfc mean", "gfc std"]
    assert rows == [["a", "1", "2"], ["g", "", ""]]


# -- in a browser -------------------------------------------------------------------------------------------------------

def png_colours(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct colours) of a screenshot: with PIL when installed, else the PNG decoded
    here (zlib and the five row filters of 8-bit RGB/RGBA)."""
    try:
        from PIL import Image
    except ImportError:
        return _decode_png(path)
    with Image.open(path) as im:
        return im.width, im.height, len(im.convert("RGB").getcolors(maxcolors=1 << 24))


def _decode_png(path: Path) -> tuple[int, int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour = (int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big"),
                                            body[8], body[9])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    prev, colours = bytearray(stride), set()
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 8 == 0:
            colours |= {bytes(line[i:i + 3]) for i in range(0, stride, bpp)}
        prev = line
    return width, height, len(colours)


def browse(browser: str, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--hide-scrollbars", "--disable-gpu",
                           "--allow-file-access-from-files", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_the_site_sorts_filters_and_draws_in_a_headless_browser(site, tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium binary (apt install chromium-headless-shell)")
    for name in ("index.html", "suite-uci.html", "dataset-uci-airfoil.html"):
        url = (site / name).as_uri() + "#selftest"
        out = browse(browser, "--dump-dom", url)
        found = re.search(r'<pre id="selftest">(.*?)</pre>', out.stdout, re.S)
        assert found, f"{name}: no self-test result in the DOM ({out.stderr[-500:]})"
        result = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                            .replace("&gt;", ">"))
        assert "error" not in result, result
        assert result["tables"] >= 1 and result["sortable"] >= 1, result
        assert result["sort"]["ascending"] and result["sort"]["descending"] and result["sort"]["changed"], result
        assert result["sort"]["same_rows"], result
        numeric = result["numeric_sort"]                 # a column of numbers sorts as numbers, both ways
        assert numeric["ascending"] and numeric["descending"] and numeric["numbers_descending"], result
        f = result["filter"]
        assert f["match"] and 1 <= f["shown"] <= f["total"] and f["cleared"], result
    for name in ("index.html", "suite-uci.html", publish.spec_file("gfc2016-table1")):
        shot = tmp_path / f"{name}.png"
        browse(browser, f"--screenshot={shot}", "--window-size=1280,1600", (site / name).as_uri())
        width, height, colours = png_colours(shot)
        assert (width, height) == (1280, 1600)
        assert colours > 20, f"{name}: the screenshot is (nearly) one colour"
        if keep := os.environ.get("RFBENCH_SCREENSHOTS"):        # to look at them: a directory to copy them to
            shutil.copy(shot, Path(keep) / shot.name)


def test_chosen_parameters_are_summarised_per_parameter():
    values = ['{"lambda": 1e-4, "sigma": 2.0, "kernel": "rbf"}', '{"lambda": 1e-3, "sigma": 2.0, "kernel": "lin"}',
              '{"lambda": 1e-2, "sigma": 2.0, "kernel": "rbf"}', None, "{}"]
    assert publish._mode_params(values) == 'lambda ≈ 0.001 (0.0001–0.01); sigma = 2; kernel = "rbf" (2 of 3)'
    assert publish._mode_params([None, "{}", ""]) == ""


# -- figures with the value under the pointer ---------------------------------------------------------------------------

def tooltips(page: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<title>([^<]*)</title>", page.split("</head>", 1)[1])]


@pytest.mark.slow
def test_figures_are_svg_with_each_cells_value_under_the_pointer(site):
    page = (site / publish.spec_file("gfc2016-table1")).read_text()
    assert 'src="data:image/png' not in page and page.count("<svg") >= 4      # (rasterised fold points: inside an SVG)
    tips = tooltips(page)
    tasks = pd.read_csv(site / "exports" / "gfc2016-table1.csv")
    done = tasks[tasks["status"] == "done"]
    cell = done.groupby(["dataset", "method", "n_features"]).agg(err=("error", "mean"), std=("error", "std"),
                                                                 t=("total_s", "mean"), k=("error", "size"))
    (ds, m, n), r = next(iter(cell.iterrows()))
    k = int(r.k)
    # error against wall time: the point of (method, dataset, n); error against n: the marker of n
    assert f"{m}, {ds}, n = {n}: error {r.err:.4g}, {r.t:.4g} s per task (mean over {k} tasks)" in tips
    assert f"{m}, {ds}, n = {n}: error {r.err:.4g} ± {r['std']:.4g} ({k} folds)" in tips
    assert any(t.startswith(f"{m}, n = {n}: median ") for t in tips)            # the wall-time box
    assert any(re.fullmatch(rf"{re.escape(m)}: average rank \d\.\d\d \(n = {n}, over \d+ datasets\)", t)
               for t in tips)                                                    # the CD diagram's marker
    board = tooltips((site / "suite-uci.html").read_text())
    assert any(re.match(r"[\w-]+, n = 100, \d+ datasets: average rank \d+\.\d\d, median ", t) for t in board)


def _frame(rows):
    return pd.DataFrame(rows, columns=["dataset", "method", "n_features", "fold", "seed", "status", "metric", "error",
                                       "total_s"])


def test_an_svg_figure_is_valid_and_titles_each_point_with_its_value():
    rows = [(ds, m, n, f, 0, "done", "mse", e + f * 0.01, 1.0 + k + n / 100)
            for ds, base in (("a", 1.0), ("b", 2.0)) for k, m in enumerate(("p", "q"))
            for n in (10, 100) for f in range(3) for e in [base + k + 1 / n]]
    df = _frame(rows)
    out = svg_figures.figure_html("pareto", plot.pareto_figure(df), df, "caption")
    svg = re.search(r"<svg.*</svg>", out, re.S).group(0)
    ET.fromstring(svg)                                                    # well-formed, inline-ready
    want = df[(df["dataset"] == "b") & (df["method"] == "q") & (df["n_features"] == 100)]
    assert (f"q, b, n = 100: error {want['error'].mean():.4g}, {want['total_s'].mean():.4g} s per task "
            "(mean over 3 tasks)") in tooltips("</head>" + svg)
    assert len(tooltips("</head>" + svg)) == 8                              # every (dataset, method, n)


# -- paths, runs, the pair matrix --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_no_page_shows_a_path_of_this_machine(site, my_run):
    home = str(Path.home())
    for page in pages(site):
        text = page.read_text()
        for where in ("/work/", home + "/", str(my_run), str(site), str(shown_paths.PACKAGE_DIR)):
            assert where not in text, (page.name, where)


def test_paths_are_shown_relative_to_the_project():
    root = shown_paths.PACKAGE_DIR.parent
    assert shown_paths.shown(root / "results" / "uci-splits") == str(Path("results") / "uci-splits")
    assert shown_paths.shown("/elsewhere/runs/mine") == "…/mine"
    assert shown_paths.scrub(f"rfbench run --out /x/y/runs --data-dir={root}/data a/b 1/2") == \
        "rfbench run --out …/runs --data-dir=data a/b 1/2"


@pytest.mark.slow
def test_the_runs_page_shows_the_runs_methods_beside_its_baseline(site, my_run):
    index = (site / "index.html").read_text()
    assert 'id="runs"' in index and 'href="run-mine.html"' in index
    page = (site / "run-mine.html").read_text()
    header, body = site_markup.table_rows(site_markup.TABLE.search(page).group(0))
    shown = " ".join(" ".join(r) + " " + " ".join(header) for r in [header, *body])
    assert "sklearn.linear_model.Ridge" in shown and "rff-gauss" in shown       # the run's method and the baseline's
    assert "Compared: sklearn.linear_model.Ridge against the baseline(s) base" in page
    assert "<svg" in page and 'src="data:image/png' not in page


def test_publish_refuses_a_runs_dir_that_is_not_a_results_directory(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    site = tmp_path / "site"
    for bad, message in ((tmp_path / "missing", "no such directory"),
                         (tmp_path / "file", "is a file, not a results directory"),
                         (tmp_path / "empty", "--runs")):
        one_line_error(capsys, ["publish", "--output", str(site), "--runs", str(bad)], message)
    assert not site.exists()                                           # nothing written


def _matrices(page: str):
    """(datasets, header, rows) of every pair matrix of a leaderboard page."""
    for m in re.finditer(r'(\d+) datasets where every method is complete.*?<h4>.*?</h4>(.*?</table>)', page, re.S):
        header, rows = site_markup.table_rows(m.group(2))
        yield int(m.group(1)), header, rows


@pytest.mark.slow
def test_the_pair_matrix_counts_every_dataset_and_is_antisymmetric(site):
    found = 0
    for name in ("suite-uci.html", "suite-torgo.html"):
        for n_datasets, header, rows in _matrices((site / name).read_text()):
            found += 1
            methods = [r[0] for r in rows]
            assert header[1:] == [f"vs {m}" for m in methods]
            wtl = {(a, methods[j]): tuple(map(int, v.split("/"))) for a, *vals in rows
                   for j, v in enumerate(vals) if v}
            assert len(wtl) == len(methods) * (len(methods) - 1)
            for (a, b), (w, t, lo) in wtl.items():
                assert w + t + lo == n_datasets
                assert wtl[(b, a)] == (lo, t, w)
    assert found >= 3


def test_pair_matrix_of_known_errors():
    rows = [(ds, m, 10, f, 0, "done", "mse", err + 0.01 * f, 1.0) for ds, errs in
            (("a", {"p": 1.0, "q": 2.0, "r": 1.0}), ("b", {"p": 1.0, "q": 1.0, "r": 3.0}))
            for m, err in errs.items() for f in range(5)]
    pairs = pairwise.matrix(_frame(rows), ["p", "q", "r"], ["a", "b"], 0.05, "welch")
    assert pairs.loc["p", "q"] == (1, 1, 0) and pairs.loc["q", "p"] == (0, 1, 1)
    assert pairs.loc["q", "r"] == (1, 0, 1) and pairs.loc["r", "q"] == (1, 0, 1)
    assert pairs.loc["p", "p"] == (0, 2, 0)


@pytest.mark.slow                        # the fixture runs two small benchmarks (about 5 s)
def test_a_run_without_a_baseline_of_its_datasets_gets_its_own_table(my_run):
    # the small baseline the fixture ran is a plain run: no compare.json, no shipped baseline of the generated sets
    page = site_runs.run_page(my_run.parent / "base", registry=load_registry())
    assert page.methods == ["rff-gauss"] and page.against.startswith("not compared: ")
    assert "Not compared with a baseline" in page.html and "rff-gauss" in page.html
    assert str(my_run.parent) not in page.html


def test_the_baseline_of_a_run_holds_most_of_its_datasets_and_is_not_its_own_copy():
    frame = pd.DataFrame({"dataset": ["bank", "elevators"], "protocol": ["cv-o10-i5"] * 2})
    chosen = site_runs.baseline_for(frame, Path("results/gfc2016-table1"))
    held = pd.read_parquet(baselines.shipped_dir() / f"{chosen}.parquet", columns=["dataset", "protocol"])
    assert chosen != "gfc2016-table1" and {"bank", "elevators"} <= set(held.loc[held["protocol"] == "cv-o10-i5",
                                                                               "dataset"])
    assert site_runs.baseline_for(frame.assign(protocol="holdout-t0.9-i2"), Path("mine")) is None
