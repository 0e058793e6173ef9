"""The user's own runs on the site (``rfbench publish --runs DIR``): a page per results directory of
``rfbench run`` or ``rfbench compare run``, its table beside the baseline of its datasets, as
``rfbench compare report`` makes it (:func:`rfbench.experiments.compare.compare`, the same common
folds, fingerprints and notes), with the figures as SVG with tooltips and the run's provenance.

The baseline: the one ``compare run`` recorded in the directory's compare.json, else the shipped
baseline under the run's protocol that holds most of its datasets (then most tasks on them), not
the directory's own shipped copy. A run
that cannot be compared (no baseline holds its datasets under its protocol, or its splits cannot
be verified) still gets its page: its own table, and the reason in one line.

:func:`check_runs` refuses a DIR that is not a results directory with a finished task, before the
site writes anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError
from rfbench.experiments import baselines, compare, html_page
from rfbench.registry import Registry
from rfbench.reporting import report, svg_figures
from rfbench.reporting.html_markup import esc
from rfbench.reporting.shown_paths import scrub, shown
from rfbench.store import load_results, recorded_shapes


@dataclass
class RunPage:
    directory: Path
    html: str
    methods: list[str]            # the run's own methods
    datasets: list[str]
    tasks: int                    # the run's finished tasks
    against: str                  # the baseline compared with, or why none


def check_runs(dirs) -> list[Path]:
    """The --runs directories, each a results directory holding a finished task; UsageError (one
    line) naming the first that is not."""
    out = []
    for d in dirs:
        path = Path(str(d).strip()) if str(d).strip() else None
        if path is None:
            raise UsageError("--runs is empty; name a results directory of `rfbench run` or `rfbench compare run`")
        if not path.is_dir():
            raise UsageError(f"--runs {d}: " + ("is a file, not a results directory" if path.exists()
                                                else "no such directory") + "; name a results directory of "
                             "`rfbench run` or `rfbench compare run`")
        try:
            done = load_results([str(path)])
        except (UsageError, OSError, ValueError) as exc:
            raise UsageError(f"--runs {d}: not a results directory ({str(exc).splitlines()[0]})") from None
        if done.empty or not (done["status"] == "done").any():
            raise UsageError(f"--runs {d}: no finished task in it (a results directory of `rfbench run` or "
                             "`rfbench compare run`)")
        out.append(path)
    return out


def baseline_for(results: pd.DataFrame, directory: Path) -> str | None:
    """The shipped baseline under the run's protocol holding most of its datasets, then most tasks
    on them (more methods to compare with); never the shipped copy of ``directory`` itself (None:
    none)."""
    keys = set(results["protocol"].dropna().astype(str))
    datasets = set(results["dataset"])
    best, held = None, (0, 0)
    for file in baselines.shipped():
        if file.stem == Path(directory).name:
            continue
        frame = pd.read_parquet(file, columns=["dataset", "protocol"])
        rows = frame[frame["protocol"].isin(keys) & frame["dataset"].isin(datasets)]
        score = (rows["dataset"].nunique(), len(rows))
        if score[0] and score > held:
            best, held = file.stem, score
    return best


def run_page(directory: Path, registry: Registry, alpha: float = 0.05) -> RunPage:
    """The page of one run: compared with its baseline when it can be, else its own table."""
    results = load_results([str(directory)])
    done = results[results["status"] == "done"]
    mine = sorted(set(done["method"]))
    title = f"Run {shown(directory)}"
    notes: list[str] = []
    against = None if (directory / compare.MARKER).is_file() else baseline_for(done, directory)
    try:
        if against is None and not (directory / compare.MARKER).is_file():
            raise UsageError("no shipped baseline holds its datasets under its protocol")
        c = compare.compare([str(directory)], [against] if against else None, registry=registry)
        frame, notes, against_text = c.frame, [scrub(n) for n in c.notes], ", ".join(shown(b) for b in c.baselines)
        title += f" against {', '.join(shown(b) for b in c.baselines)}"
    except UsageError as exc:           # its own table, and why it is not beside a baseline
        why = scrub(str(exc).splitlines()[0])
        frame, against_text = done, f"not compared: {why}"
        notes = [f"Not compared with a baseline ({why}): the run's own results."]
    fragment = report.render(frame, "html", alpha, html_fragment=True, registry=registry,
                             shapes=recorded_shapes([directory]))
    page = html_page.document(f"rfbench run: {shown(directory)}", [
        f"<h1>{esc(title)}</h1>",
        f'<p class="sub">methods of the run: {esc(", ".join(mine))}; {len(done)} finished tasks</p>',
        *(f'<p class="sub">{esc(n)}</p>' for n in notes),
        fragment, html_page.figures_section(frame, [directory], draw=svg_figures.figure_html),
        html_page.provenance_section([directory])])
    return RunPage(directory, page, mine, sorted(set(done["dataset"])), len(done), against_text)
