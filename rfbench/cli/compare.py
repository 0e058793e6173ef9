"""rfbench compare run | report | plot: your methods against a shipped baseline."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from rfbench.cli.options import (
    ALPHA,
    WIDTH,
    data_dir_option,
    latex_label,
    name_list,
    output_dir,
    output_file,
    parse_folds,
    parse_int_list,
    quiet_option,
    registry_option,
    results_dir_option,
    split_names,
    worker_options,
)
from rfbench.cli.running import run_config
from rfbench.execution.runconfig import MAX_FEATURES
from rfbench.formats import FIGURE_FORMATS, TABLE_FORMATS


@click.group("compare")
def compare_group():
    """Compare a new method with the shipped baselines on their outer folds (see `rfbench baselines`)."""


@compare_group.command("run")
@click.argument("baseline")
@click.option("--methods", "method_names", required=True,
              help="your estimator(s) as package.module:Class (comma-separated), or registered methods the baseline "
                   "lacks")
@click.option("--datasets", "dataset_names", default=None, help="only these of the baseline's datasets (default: all)")
@click.option("--features", default=None, help="only these of the baseline's feature budgets (default: all)")
@click.option("--folds", "fold_list", default=None,
              help="only these outer folds, e.g. 0-2 (a screen; the splits are the baseline's either way)")
@click.option("--protocol", "protocol_key", default=None, metavar="KEY",
              help="the baseline's protocol to run under, when it holds several")
@click.option("--out", required=True, help="results directory of your run (resumable)")
@worker_options
@data_dir_option()
@registry_option("a user registry (YAML with methods:/datasets: sections) that extends the built-in one")
@click.option("--no-report", is_flag=True, help="do not print the comparison at the end")
@quiet_option
def compare_run(baseline, method_names, dataset_names, features, fold_list, protocol_key, out, jobs, threads,
                timeout, data_dir, registry_files, no_report, quiet):
    """Run your method on BASELINE's outer folds, under its protocol, seed and feature budgets; the
    splits are verified identical to the baseline's by their fingerprint before anything runs.

    BASELINE: a shipped baseline (`rfbench baselines`), its spec's name, or a results directory."""
    import shlex

    from rfbench import registry
    from rfbench.experiments import compare

    out = results_dir_option(out)
    reg = registry.load(registry_files)
    run_dir, b, names = compare.run(
        baseline, split_names(method_names), split_names(dataset_names) or None,
        parse_int_list(features, "--features", MAX_FEATURES) if features else None, parse_folds(fold_list), out,
        run_config(jobs=jobs, threads=threads, timeout=timeout, data_dir=data_dir, device="cpu"), registry=reg,
        protocol_key=protocol_key, progress=not quiet, command="rfbench " + " ".join(sys.argv[1:]))
    click.echo(f"results: {run_dir.path} ({', '.join(names)}); splits identical to baseline {b.name} "
               "(by their fingerprints, checked before the run)")
    if not no_report:
        click.echo(compare.render(compare.compare([str(run_dir.path)], [baseline], registry=reg), "text",
                                  width=_report_width(None), registry=reg))
    # the baseline as the user named it (a results directory is a path, not a shipped name), and their registry
    again = "".join(f" --registry {shlex.quote(str(f))}" for f in registry_files)
    click.echo(f"report: rfbench compare report {shlex.quote(out)} --against {shlex.quote(baseline)}{again} "
               "--format latex")


def _report_width(width):
    from rfbench.reporting.render.common import terminal_width

    return terminal_width() if width is None else width


@compare_group.command("report")
@click.argument("dirs", nargs=-1, required=True)
@click.option("--against", default=None, metavar="BASELINE[,BASELINE]",
              help="shipped baselines (or results directories) to compare with, comma-separated (default: the one "
                   "the run was made against, from its compare.json)")
@click.option("--methods", "method_list", default=None,
              help="only these methods, yours and the baselines' (comma-separated; default: all)")
@click.option("--datasets", "dataset_list", default=None, help="only these datasets (default: all the run has)")
@click.option("--format", "fmt", default="text", show_default=True,
              type=click.Choice(TABLE_FORMATS))
@click.option("--output", default=None, help="write to this file instead of stdout")
@click.option("--alpha", default=0.05, show_default=True, type=ALPHA, help="significance level")
@click.option("--test", "ttest", default="welch", show_default=True, type=click.Choice(["welch", "paired"]),
              help="the t-test that bolds cells (paired: by fold, the folds being identical)")
@click.option("--names", default=None, help="display names of methods, e.g. 'mymod.MyRidge=mine,gfc=GFC' or a .yaml file")
@click.option("--label", default=None, callback=latex_label, help="LaTeX \\label of the table (default: tab:<name of the first DIR>)")
@click.option("--latex-width", default="469pt", show_default=True, help="text width the LaTeX must fit")
@click.option("--width", type=WIDTH, default=None, help="characters per line of the text format (0: no limit)")
@registry_option("the user registry the run used (its datasets and methods), as given to `compare run`")
def compare_report(dirs, against, method_list, dataset_list, fmt, output, alpha, ttest, names, label, latex_width,
                   width, registry_files):
    """Your run beside the baselines in the papers' table layout (t-tests, Wilcoxon), on the folds
    that every shown method has finished, labelled so (a screen over folds 0-2 says it is)."""
    from rfbench.experiments import compare
    from rfbench.reporting import report
    from rfbench.store import atomic_write_text

    output_path = output_file(output)
    from rfbench import registry

    reg = registry.load(registry_files)
    c = compare.compare(list(dirs), split_names(against) or None, name_list(method_list), name_list(dataset_list),
                        registry=reg)
    label = label or "tab:" + re.sub(r"[^A-Za-z0-9:._-]+", "-", Path(dirs[0]).resolve().name)
    text = compare.render(c, fmt, registry=reg, alpha=alpha, test=ttest, names=report.parse_names(names), width=_report_width(width),
                          label=label, latex_width=report.parse_length(latex_width))
    if output_path is not None:
        atomic_write_text(output_path, text)
        click.echo(f"wrote {output}")
    else:
        click.echo(text, nl=False)


@compare_group.command("plot")
@click.argument("dirs", nargs=-1, required=True)
@click.option("--against", default=None, metavar="BASELINE[,BASELINE]",
              help="shipped baselines (or results directories) to compare with (default: the run's compare.json)")
@click.option("--methods", "method_list", default=None, help="only these methods, yours and the baselines'")
@click.option("--datasets", "dataset_list", default=None, help="only these datasets (default: all the run has)")
@click.option("--kind", default="cd", show_default=True,
              type=click.Choice(["cd", "error-vs-n", "walltime", "pareto", "all"]),
              help="as rfbench plot: the critical-difference diagram per n by default")
@click.option("--format", "fmt", default="png", show_default=True, type=click.Choice(FIGURE_FORMATS))
@click.option("--output", default="plots", show_default=True, help="directory the figures are written to")
@click.option("--alpha", default=0.05, show_default=True, type=ALPHA, help="significance level (cd)")
@click.option("--cd-test", default="nemenyi", show_default=True, type=click.Choice(["nemenyi", "wilcoxon-holm"]),
              help="post-hoc test of the critical-difference diagram after the Friedman test")
@registry_option("the user registry the run used (its datasets and methods), as given to `compare run`")
def compare_plot(dirs, against, method_list, dataset_list, kind, fmt, output, alpha, cd_test, registry_files):
    """Figures of your run beside the baselines, on the folds every shown method has finished (the
    same rows as `rfbench compare report`)."""
    from rfbench import registry
    from rfbench.experiments import compare
    from rfbench.reporting import plot

    output = output_dir(output)
    c = compare.compare(list(dirs), split_names(against) or None, name_list(method_list), name_list(dataset_list),
                        registry=registry.load(registry_files))
    written, notes = plot.make_plots(c.frame, kind, output, fmt, alpha, cd_test,   # nothing to plot: one line
                                     time_caveat=c.time_caveat)
    for note in c.notes[:1]:
        click.echo(note, err=True)
    for note in notes:
        click.echo(f"rfbench compare plot: {note}", err=True)
    for path in written:
        click.echo(f"wrote {path}")


