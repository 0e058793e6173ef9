"""rfbench publish | baselines: the site, and the shipped baseline results."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rfbench.cli.options import ALPHA, JOBS, WIDTH, CountOption, output_dir, registry_option
from rfbench.errors import UsageError


@click.command("publish")
@click.option("--output", required=True, help="the directory of the site (created if missing, not its parent)")
@click.option("--alpha", default=0.05, show_default=True, type=ALPHA, help="significance level (leaderboards, pages)")
@registry_option("extra datasets/methods/suites file (repeatable)")
@click.option("--jobs", cls=CountOption, default=None, type=JOBS,
              help="processes drawing the spec pages (default: the CPU count)")
@click.option("--runs", "runs", multiple=True, metavar="DIR",
              help="a results directory of `rfbench run` or `rfbench compare run` to show beside the baseline of its "
                   "datasets, a page each (repeatable)")
@click.option("--quiet", is_flag=True, help="print only the summary line")
def publish_cmd(output, alpha, registry_files, jobs, runs, quiet):
    """Every spec's results as one static site in --output (docs/site.md): an index of the specs and
    suites, a page per spec, leaderboards per suite, a page per dataset and per method, tables that
    sort and filter with their CSV, and one-row-per-task exports (CSV and Parquet). Each spec's
    results are read where they resolve: its local results directory, else its shipped baseline.
    No network: open DIR/index.html from the file system or serve DIR."""
    from rfbench import registry
    from rfbench.experiments import publish

    reg = registry.load(registry_files)
    site = publish.build(output_dir(output), reg, alpha=alpha, jobs=jobs, runs=runs,
                         progress=None if quiet else lambda line: click.echo(line, err=True))
    click.echo(f"wrote {len(site.pages)} pages and {len(site.files)} CSV/Parquet files into {output} in "
               f"{site.seconds:.1f} s; open {Path(output) / 'index.html'}")


@click.command("baselines")
@click.option("--width", type=WIDTH, default=None,
              help="characters per line (default: the terminal's width, 80 when not a terminal; 0: no limit)")
@click.option("--write", is_flag=True,
              help="regenerate the shipped files (rfbench/_data/baselines/) from the results directories of the "
                   "specs in a checkout")
@click.option("--check", "check_only", is_flag=True,
              help="exit 1 when a shipped file differs from what --write would write (a stale baseline)")
def baselines_cmd(width, write, check_only):
    """The baselines that ship: every spec's results directory as one Parquet file, one row per
    task (see docs/baselines.md); compare a method with them through `rfbench compare`."""
    from tabulate import tabulate

    from rfbench import registry
    from rfbench.experiments import baselines

    if write and check_only:
        raise UsageError("give --write (regenerate) or --check (compare), not both")
    reg = registry.load() if write or check_only else None
    if write:
        unavailable: list = []
        for path, changed in baselines.write_all(unavailable=unavailable, registry=reg):
            state = ("removed" if not path.exists() else "written") if changed else "unchanged"
            click.echo(f"{state}: {path} ({path.stat().st_size if path.exists() else 0} bytes)")
        if unavailable:
            click.echo(f"folds_sha256 left null, the data not being here (set RFBENCH_DATA_DIR to the mirror): "
                       f"{_fingerprint_tasks(unavailable)}")
    if check_only:
        unverified: list = []
        stale = baselines.stale(unverified, reg)
        for line in stale:
            click.echo(f"stale: {line}")
        if unverified:
            click.echo(f"not verified, the data not being here (the shipped folds_sha256 accepted): "
                       f"{_fingerprint_tasks(unverified)}")
        if stale:
            click.echo("regenerate with `rfbench baselines --write` and commit the files", err=True)
            sys.exit(1)
        click.echo(f"{len(baselines.shipped())} shipped baseline(s) agree with their results directories")
        return
    rows = baselines.listing([baselines.read_file(p) for p in baselines.shipped()])
    if not rows:
        raise UsageError(f"no baselines in {baselines.shipped_dir()}; in a checkout, `rfbench baselines --write` "
                         "writes them")
    from rfbench.reporting.render.common import terminal_width

    width = terminal_width() if width is None else width
    table = tabulate(rows, headers="keys")
    if width and max(map(len, table.splitlines())) > width:
        # too wide for the terminal: the other columns as a table, each baseline's methods below its row
        import textwrap

        head = tabulate([{k: v for k, v in r.items() if k != "methods"} for r in rows], headers="keys").splitlines()
        lines = head[:2]
        for line, r in zip(head[2:], rows, strict=True):
            lines += [line, textwrap.indent(textwrap.fill(r["methods"], max(20, width - 4), break_on_hyphens=False,
                                                          break_long_words=False), "    ")]
        table = "\n".join(lines)
    click.echo(table)
    total = sum(p.stat().st_size for p in baselines.shipped())
    for b in (baselines.read_file(p) for p in baselines.shipped()):
        if b.spec not in (None, b.name):
            click.echo(f"{b.name}*: the results directory of spec {b.spec}")
    if any(r["compare"] == "no" for r in rows):
        click.echo("compare no: the fingerprint of some dataset's splits is missing (its data was not here when "
                   "the file was written), so `rfbench compare` cannot verify them")
    click.echo(f"{len(rows)} baselines, {total / 1024:.0f} KiB in {baselines.shipped_dir()}")


def _fingerprint_tasks(tasks) -> str:
    """(file, protocol key, dataset, seed) tuples as one line: file: dataset, ... (seed when not 0)."""
    by_file: dict[str, list[str]] = {}
    for name, _key, dataset, seed in tasks:
        by_file.setdefault(name, []).append(dataset if seed == 0 else f"{dataset} (seed {seed})")
    return "; ".join(f"{name}: {', '.join(sets)}" for name, sets in by_file.items())


