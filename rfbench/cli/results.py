"""rfbench report | status | check | plot: the tables, the state and the figures of results."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from rfbench.cli.options import (
    ALPHA,
    WIDTH,
    data_dir_option,
    filter_options,
    latex_label,
    name_list,
    output_dir,
    output_file,
    registry_option,
    time_option,
)
from rfbench.cli.running import no_mirror_note
from rfbench.errors import UsageError
from rfbench.formats import FIGURE_FORMATS, TABLE_FORMATS


@click.command("report")
@click.argument("dirs", nargs=-1)
@click.option("--format", "fmt", default="text", show_default=True,
              type=click.Choice(TABLE_FORMATS),
              help="html: one self-contained page (tables, figures, the check against the published table when "
                   "DIR belongs to a spec, provenance)")
@click.option("--output", default=None, help="write to this file instead of stdout (with --all: a directory)")
@click.option("--all", "all_specs", is_flag=True,
              help="with --format html --output DIR: DIR/index.html and DIR/<spec>.html for every spec in bench/ "
                   "with results (--names, --alpha and --test apply to every page; --test replaces each spec's "
                   "own t-test)")
@click.option("--alpha", default=0.05, show_default=True, type=ALPHA, help="significance level")
@click.option("--compare", default=None,
              help="extra Wilcoxon comparisons across n, e.g. gfc@500:alc@100 (comma-separated)")
@click.option("--test", "ttest", default="welch", show_default=True, type=click.Choice(["welch", "paired"]),
              help="the t-test that bolds cells: Welch's unequal-variance test over the outer folds, or the "
                   "paired t-test on the per-fold differences (folds paired by number; with several seeds, by "
                   "(seed, fold) over every seed's folds); when DIRS are one spec's results, the spec's own test "
                   "unless given")
@click.option("--layout", default=None, type=click.Choice(["default", "gp"]),
              help="gp: the GP / kernel-learning papers' table (Yang et al. 2015, Wilson et al. 2016): per n, "
                   "datasets as rows grouped by size (small, intermediate, ...) with (m, d), methods as columns, "
                   "mean ± std over the splits, bold = the best mean and every method not significantly worse "
                   "(paired t-test unless --test is given), then an average rank row; html adds the "
                   "critical-difference diagram and error against time per size group. Default: the spec's own layout "
                   "when DIRS are one spec's results (its name or results directory; with --all: each spec's), "
                   "else the default layout")
@click.option("--relative", is_flag=True,
              help="with --layout gp: each test RMSE divided by the std of its dataset's target as stored (RMSE / "
                   "std(y); loads the data), so that sets of different target scales compare")
@click.option("--names", default=None,
              help="display names of methods, e.g. 'gfc=GFC,alc=à la carte' (comma-separated), or a .yaml file "
                   "mapping registered to display names; used in every format but csv (default: registered names)")
@click.option("--label", default=None, callback=latex_label,
              help="LaTeX \\label of the table (default: tab:<name of the first DIR>); the Wilcoxon table gets "
                   "<label>-wilcoxon")
@click.option("--latex-width", default="469pt", show_default=True,
              help="text width the LaTeX must fit (pt, in, cm, mm, bp; 469pt = 6.5 in): one table if it fits, "
                   "else one panel per n, then \\footnotesize, then panels of whole methods; \\resizebox last")
@click.option("--width", type=WIDTH, default=None,
              help="characters per line of the text format (default: the terminal's width, 80 when not a "
                   "terminal; 0: no limit); wider tables are split per n and into column blocks")
@click.option("--protocol", "protocol_key", default=None, metavar="KEY",
              help="only the records of this protocol key (e.g. cv-o10-i5); needed when DIRS hold one cell under "
                   "several protocols, which are never pooled")
@time_option
@filter_options
@registry_option("a user registry (YAML with methods:/datasets: sections) that extends the built-in one, for the "
                 "shape (m, d) of its datasets; repeatable (also $RFBENCH_REGISTRY)")
def report_cmd(dirs, fmt, output, all_specs, alpha, compare, ttest, layout, relative, names, label, latex_width,
               width, protocol_key, time_measure, method_filter, dataset_filter, registry_files):
    """Error/walltime tables in the papers' layout with t-tests (bold) and Wilcoxon tests.

    DIRS are results directories, or spec names (see `rfbench reproduce --list`): a spec's results are
    its results directory when that holds records here, else the baseline that ships with rfbench
    (built from the project's committed results), read without writing anything; a line on stderr
    says which."""
    from rfbench import registry
    from rfbench.reporting import cells, report
    from rfbench.reporting.render import shows_footer
    from rfbench.reporting.render.common import terminal_width
    from rfbench.store import atomic_write_text, load_results, recorded_shapes

    reg = registry.load(registry_files)
    display_names = report.parse_names(names)      # a bad --names file is refused before anything is read
    if all_specs:
        from rfbench.experiments import html_page
        from rfbench.experiments.spec import all_specs as every_spec

        if dirs or fmt != "html" or output is None or method_filter or dataset_filter:
            raise UsageError("--all writes a page per spec: give --format html --output DIR, and no DIRS, "
                             "--methods or --datasets")
        if time_measure != "wall":
            raise UsageError("--time cpu goes with a report of DIRS; --all's pages show each task's wall time "
                             "(a busy machine's said so in their captions)")
        _refuse_with_all(compare, protocol_key)
        display = display_names
        # --names and --alpha as for `report DIR`; --test, when given, replaces each spec's own t-test
        # (the one its paper bolds with)
        given = click.get_current_context().get_parameter_source("ttest")
        test = ttest if given == click.core.ParameterSource.COMMANDLINE else None
        for path in html_page.write_site(output_dir(output), lambda spec: html_page.spec_page(
                spec, registry=reg, names=display, test=test, alpha=alpha, layout=layout), every_spec(reg)):
            click.echo(f"wrote {path}")
        return
    if not dirs:
        raise UsageError("give the results directories to report (or --all --format html --output DIR)")
    sources_read, spec_of_arg = _resolve_dirs(dirs, reg)
    output_path = output_file(output)
    width = terminal_width() if width is None else width
    label = label or "tab:" + re.sub(r"[^A-Za-z0-9:._-]+", "-", Path(dirs[0]).resolve().name)
    # one spec's results (by name or directory) are reported as its own page is: its layout and the
    # t-test its paper bolds with, unless --layout / --test say otherwise
    spec = _the_spec(dirs, spec_of_arg, reg)
    test_given = click.get_current_context().get_parameter_source("ttest") == click.core.ParameterSource.COMMANDLINE
    layout_given = layout is not None
    if spec is not None:
        if (not layout_given and spec.layout != "default") or (not test_given and spec.test.name != ttest):
            click.echo(f"{spec.name}: its own layout ({layout or spec.layout}) and t-test "
                       f"({ttest if test_given else spec.test.name}); --layout and --test replace them", err=True)
        layout = layout or spec.layout
        ttest = ttest if test_given else spec.test.name
    layout = layout or "default"
    if layout == "gp" and compare:
        raise UsageError("--compare adds Wilcoxon rows across n to the default layout; the gp layout has no Wilcoxon "
                         "table (its average rank row and the critical-difference diagram compare the methods): "
                         + ("leave out --layout gp or --compare" if layout_given else
                            f"add --layout default ({spec.name}'s own layout is gp) or leave out --compare"))
    if relative and layout != "gp":
        raise UsageError("--relative (RMSE / std(y)) goes with --layout gp; add --layout gp")
    results = cells.select(load_results(sources_read, protocol_key), name_list(method_filter), name_list(dataset_filter))
    if relative:
        from rfbench.reporting import gp_table

        results = gp_table.relative_to_target_std(results, reg)
    results, time = _timed(results, time_measure, sources_read)
    options = dict(names=display_names, width=width, label=label,
                   latex_width=report.parse_length(latex_width), html_fragment=fmt == "html", registry=reg,
                   shapes=recorded_shapes(sources_read),
                   footer=_run_walltimes(sources_read) if shows_footer(fmt) else ())
    if layout == "gp":
        from rfbench.reporting import gp_table

        # the papers compare on the same fixed splits: paired, unless --test (or the spec) says otherwise
        test = ttest if test_given or spec is not None else "paired"
        text = gp_table.render(results, fmt, alpha, test, **options)
    else:
        comparisons = report.parse_comparisons(compare)
        report.check_comparisons(results, comparisons)
        text = report.render(results, fmt, alpha, comparisons, test=ttest, time=time, **options)
    if fmt == "html":
        text = _html_page(dirs, sources_read, spec_of_arg, results, text, protocol_key, name_list(method_filter),
                          name_list(dataset_filter), reg, layout, alpha, time)
    if output_path is not None:
        atomic_write_text(output_path, text)
        click.echo(f"wrote {output}")
    else:
        click.echo(text, nl=False)


def _the_spec(dirs, spec_of_arg: dict, reg):
    """The spec whose results every DIR is (DIRS naming one spec, or its results directory), else None."""
    from rfbench.experiments.spec import spec_of_results

    if len(dict.fromkeys(Path(d).resolve() if Path(d).is_dir() else d for d in dirs)) != 1:
        return None
    if 0 in spec_of_arg:
        return spec_of_arg[0]
    return spec_of_results(dirs[0], reg) if Path(dirs[0]).is_dir() else None


def _run_walltimes(sources_read) -> list[str]:
    """A line per run directory read (not a shipped baseline) on its wall time: what the formats read
    as prose (text, Markdown) say after the report."""
    from rfbench.experiments import sources
    from rfbench.reporting.render.common import fmt_walltime
    from rfbench.store import run_walltime

    lines = []
    for d in dict.fromkeys(d for d in sources_read if not sources.is_shipped(d)):   # named twice: one run
        seconds, n = run_walltime(d)
        if n:
            lines.append(f"Wall time of the run in {d}: {fmt_walltime(seconds)} over {n} invocation(s) that ran "
                         "tasks (each from its start to the last task it finished).")
    return lines


def _refuse_with_all(compare, protocol_key) -> None:
    """The report options that name one run's cells or records, which --all's pages (each spec's own
    methods and protocol) cannot take: refused in one line rather than ignored."""
    if compare:
        raise UsageError("--compare names cells of one run; with --all each spec's page has the Wilcoxon "
                         "comparisons its spec declares: report one spec's directory with --compare instead "
                         "(rfbench report DIR --format html --compare ...)")
    if protocol_key:
        raise UsageError("--protocol selects one run's records; with --all each spec's page reads its own "
                         "protocol: report one spec's directory with --protocol instead")


def _resolve_dirs(dirs, reg) -> tuple[list, dict]:
    """The DIRS of report, check and plot as load_results reads them: a directory as it is; a spec's
    name (or its results directory when that is not here) as its results
    (rfbench.experiments.sources: the local directory, else the shipped baseline), said in one line
    on stderr. Returns (what to read, in order; {index of a spec argument: its spec})."""
    from rfbench.experiments import sources

    read, specs = [], {}
    for i, d in enumerate(dirs):
        src, spec, directory = sources.resolve_arg(d, reg)
        read.append(src)
        if spec is not None:
            specs[i] = spec
            click.echo(f"{spec.name}: {sources.describe([(directory, src)])}", err=True)
    return read, specs


def _timed(results, time_measure: str, read):
    """(``results`` with the seconds ``--time`` shows in ``total_s``, the TimeMeasure): as they are for
    wall, each task's CPU seconds for cpu (the tasks a device computed in ``read`` left out)."""
    from rfbench.reporting import timing

    time = timing.MEASURES[time_measure]
    if time is timing.CPU:
        from rfbench.store import device_tasks

        results = timing.in_cpu_seconds(results, device_tasks(read))
    return results, time


def _html_page(dirs, read, specs: dict, results, fragment: str, protocol_key, methods, datasets, reg,
               layout: str, alpha: float, time) -> str:
    """The page of `rfbench report DIR --format html`: with the check when DIR is a spec's results
    directory or name (on the records `rfbench check DIR` reads)."""
    from rfbench.experiments import html_page, sources
    from rfbench.experiments.spec import spec_of_results
    from rfbench.store import load_results

    one = len(dict.fromkeys(map(str, read))) == 1
    spec = (specs.get(0) or spec_of_results(dirs[0], reg)) if one else None
    checked = None
    if spec is not None and spec.published:
        first = Path(dirs[0]).resolve() if 0 not in specs else spec.results
        extra = [src for d in spec.also_reads if d != first and (src := sources.source(d)) is not None]
        checked = load_results([read[0], *extra], protocol_key or spec.protocol_key, missing_ok=protocol_key is None)
    shown = [Path(d) if not sources.is_shipped(d) else d for d in dict.fromkeys(read)]
    return html_page.directory_page(shown, results, fragment, spec, check_results=checked, methods=methods,
                                    datasets=datasets, registry=reg, layout=layout, alpha=alpha, time=time)


@click.command("status")
@click.argument("targets", nargs=-1)
@data_dir_option()
@registry_option("the user registry (YAML with methods:/datasets: sections) the run used")
def status_cmd(targets, data_dir, registry_files):
    """Progress per experiment: tasks asked for (by the spec), done, failed, left, core-hours left.

    TARGETS are spec names or files, or results directories (default: every spec in bench/). A spec's
    results are its results directory when that holds records here, else its shipped baseline (a line
    on stderr says which)."""
    from rfbench import registry
    from rfbench.data.loader import data_dirs
    from rfbench.experiments import status
    from rfbench.experiments.spec import spec_paths

    data_dirs(data_dir)         # a bad --data-dir is refused before any results directory is read
    targets = targets or [p.stem for p in spec_paths()]
    table = status.status(targets, data_dir, registry.load(registry_files))
    for line in table.attrs.get("sources", []):
        click.echo(line, err=True)
    click.echo(status.render(table), nl=False)
    if note := no_mirror_note(data_dir):
        click.echo(note, err=True)


@click.command("check")
@click.argument("dirs", nargs=-1, required=True)
@click.option("--spec", default=None, help="spec name or path (default: the spec whose results directory DIRS[0] is)")
@click.option("--protocol", "protocol_key", default=None, metavar="KEY",
              help="only the records of this protocol key (default: the spec's protocol, when it names one)")
@filter_options
def check_cmd(dirs, spec, protocol_key, method_filter, dataset_filter):
    """Compare results with a published table; exit 1 if any present cell fails (a cell the spec
    marks not comparable is shown and counted apart, never failed).

    DIRS are results directories, or spec names (see `rfbench reproduce --list`): a spec's results are
    its results directory when that holds records here, else the baseline that ships with rfbench
    (built from the project's committed results), read without writing anything; a line on stderr
    says which."""
    from rfbench import registry
    from rfbench.experiments import check, reproduce, sources
    from rfbench.experiments.spec import load_spec, spec_of_results
    from rfbench.store import load_results

    reg = registry.load()
    read, specs = _resolve_dirs(dirs, reg)
    if spec is None:
        sp = specs.get(0) or spec_of_results(dirs[0], reg)
        if sp is None:
            raise UsageError(f"no spec has {dirs[0]} as its results directory; name one with --spec")
    else:
        sp = load_spec(spec, reg)
    given = [specs[i].results if i in specs else Path(d).resolve() for i, d in enumerate(dirs)]
    if sp.results in given:      # the spec's own directory: the columns it reads elsewhere come too
        extra = [(d, sources.source(d)) for d in sp.also_reads if d not in given]
        extra = [(d, src) for d, src in extra if src is not None]
        if extra and any(i in specs for i in range(len(dirs))):
            click.echo(f"{sp.name} also reads: {sources.describe(extra)}", err=True)
        read = [*read, *(src for _, src in extra)]
    results = load_results(read, protocol_key or sp.protocol_key, missing_ok=protocol_key is None)
    table, text, _ = reproduce.check_text(sp, results, name_list(method_filter), name_list(dataset_filter), registry=reg)
    click.echo(text, nl=False)
    if (check.paper_cells(table)["status"] == "fail").any():
        sys.exit(1)


@click.command("plot")
@click.argument("dirs", nargs=-1)
@click.option("--kind", default="all", show_default=True,
              type=click.Choice(["cd", "error-vs-n", "walltime", "pareto", "all"]),
              help="critical-difference diagram per n, error against n per dataset, wall time per method and n, "
                   "error against wall time with the Pareto front, or every one that has something to plot")
@click.option("--format", "fmt", default="png", show_default=True, type=click.Choice(FIGURE_FORMATS))
@click.option("--output", default="plots", show_default=True, help="directory the figures are written to")
@click.option("--alpha", default=0.05, show_default=True, type=ALPHA, help="significance level (cd)")
@click.option("--cd-test", default="nemenyi", show_default=True, type=click.Choice(["nemenyi", "wilcoxon-holm"]),
              help="post-hoc test of the critical-difference diagram after the Friedman test")
@click.option("--protocol", "protocol_key", default=None, metavar="KEY",
              help="only the records of this protocol key (e.g. cv-o10-i5); needed when DIRS hold one cell under "
                   "several protocols, which are never pooled")
@click.option("--spec", "spec_name", default=None, metavar="SPEC",
              help="the figures a spec declares (its 'figures' block, e.g. eerf2018-figures: error against M and "
                   "against time with the published cells marked) from its results directories, written with "
                   "figures.csv into its results directory (or --output if given)")
@time_option
@filter_options
@click.pass_context
def plot_cmd(ctx, dirs, kind, fmt, output, alpha, cd_test, protocol_key, spec_name, time_measure, method_filter,
             dataset_filter):
    """Figures of one or more results directories, or a spec's own figures (matplotlib, headless).

    DIRS are results directories, or spec names (see `rfbench reproduce --list`): a spec's results are
    its results directory when that holds records here, else the baseline that ships with rfbench
    (built from the project's committed results), read without writing anything; a line on stderr
    says which."""
    from rfbench.reporting import plot
    from rfbench.store import load_results

    if spec_name is not None:
        from rfbench.experiments.reproduce import results_of
        from rfbench.experiments.spec import load_spec

        if dirs or kind != "all" or method_filter or dataset_filter or time_measure != "wall":
            raise UsageError("--spec plots the spec's declared figures from its own results: give no DIRS, --kind, "
                             "--methods, --datasets or --time")
        from rfbench import registry
        from rfbench.experiments import sources

        spec = load_spec(spec_name, registry.load())
        explicit = ctx.get_parameter_source("output") == click.core.ParameterSource.COMMANDLINE
        pairs = sources.of_spec(spec)
        if not explicit and pairs and sources.is_shipped(pairs[0][1]):
            raise UsageError(f"the results of {spec.name} are its shipped baseline (no records in {spec.results}): "
                             "nothing is written there; give --output DIR for its figures")
        click.echo(f"{spec.name}: {sources.describe(pairs)}", err=True)
        for path in plot.write_spec_figures(spec, results_of(spec), output_dir(output) if explicit else None, fmt):
            click.echo(f"wrote {path}")
        return
    if not dirs:
        raise UsageError("give the results directories to plot (or --spec SPEC)")
    from rfbench import registry
    from rfbench.reporting import cells

    read, _ = _resolve_dirs(dirs, registry.load())
    results = cells.select(load_results(read, protocol_key), name_list(method_filter), name_list(dataset_filter))
    results, time = _timed(results, time_measure, read)
    written, notes = plot.make_plots(results, kind, output_dir(output), fmt, alpha, cd_test, time=time)
    for note in notes:
        click.echo(f"rfbench plot: {note}", err=True)
    for path in written:
        click.echo(f"wrote {path}")


