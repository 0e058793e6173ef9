"""Command line: rfbench run | report | check | reproduce | status | baselines | compare | datasets | methods.

Usage errors and bad input exit with code 2 and one line naming the problem, never a traceback.
"""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

import click

from rfbench.errors import UsageError
from rfbench.execution.runconfig import (  # noqa: F401 - MAX_TIMEOUT_S: the old name
    DEFAULT_GPU_SLOTS,
    MAX_FEATURES,
    MAX_TIMEOUT_S,
    check_timeout,
)
from rfbench.formats import FIGURE_FORMATS, TABLE_FORMATS

DEFAULT_SUITE = "synthetic"




class SignificanceLevel(click.ParamType):
    """A significance level: a number strictly between 0 and 1 (NaN, 0, 1 and beyond are refused)."""
    name = "alpha"

    def convert(self, value, param, ctx):
        try:
            level = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number; give a significance level such as 0.05", param, ctx)
        if not 0 < level < 1:          # also false for NaN
            self.fail(f"{value} is not a significance level; give a number strictly between 0 and 1, e.g. 0.05",
                      param, ctx)
        return level


ALPHA = SignificanceLevel()
#: --width: characters per line, 0 for no limit; a bound that no terminal reaches
WIDTH = click.IntRange(0, 100_000)


def latex_label(ctx, param, value: str | None) -> str | None:
    """A --label as a LaTeX \\label key: letters, digits and ``:._-`` (anything else, e.g. a brace or a
    backslash that would run TeX code, is refused in one line)."""
    if value is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9:._-]{1,200}", value):
        raise click.BadParameter(f"{value!r:.60} is not a LaTeX label: use letters, digits and ':._-' only "
                                 "(e.g. tab:uci)", ctx, param)
    return value


def parse_duration(text: str | None) -> float | None:
    """'90', '90s', '30m', '2h', '1h30m' → seconds."""
    if text is None or text == "":
        return None
    m = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not m or not any(m.groups()):
        raise UsageError(f"--timeout '{text}' is not a duration; use e.g. 90s, 30m, 2h or 1h30m")
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return check_timeout(3600 * h + 60 * mi + s, text)


def parse_int_list(text: str, option: str, at_most: int) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{option} '{text}' must be comma-separated integers, e.g. 100,500") from None
    if not values or any(v < 1 for v in values):
        raise UsageError(f"{option} '{text}' must be positive integers, e.g. 100,500")
    if max(values) > at_most:
        raise UsageError(f"{option} '{text}' must be at most {at_most} each, e.g. 100,500")
    return values


def results_dir_option(text: str, option: str = "--out") -> str:
    """A results directory option as given; an empty one would be the current directory."""
    if not text.strip():
        raise UsageError(f"{option} is empty; name the results directory, e.g. {option} runs/mine")
    return text


def output_file(text: str | None) -> Path | None:
    """--output FILE (report, compare report), or None for stdout. Its directory must exist: a
    mistyped path would otherwise create directories where the user did not look."""
    if text is None:
        return None
    if not text.strip():
        raise UsageError("--output is empty; name a file, or leave the option out to print to stdout")
    path = Path(text)
    if path.is_dir():
        raise UsageError(f"--output {text} is a directory; name a file")
    if path.parent.exists() and not path.parent.is_dir():
        raise UsageError(f"--output {text}: {path.parent} is a file, not a directory; name a file in a directory")
    if not path.parent.is_dir():
        raise UsageError(f"--output {text}: directory {path.parent} does not exist; create it first or name a "
                         "file in an existing directory")
    return path


def output_dir(text: str) -> Path:
    """--output DIR of figures or pages: created if missing, but not its parent (a mistyped path)."""
    if not text.strip():
        raise UsageError("--output is empty; name the directory to write to, e.g. --output plots")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--output {text} is a file, not a directory; name a directory to write to")
    if not path.parent.is_dir():
        raise UsageError(f"--output {text}: directory {path.parent} does not exist; create it first or name a "
                         "directory in an existing one")
    return path


def parse_seeds(text: str | None, seed: int = 0) -> list[int]:
    """--seeds '0,1,2' → [0, 1, 2] (each once, in the order given); without --seeds, [--seed]."""
    if text is None:
        return [seed]
    if seed != 0:
        raise UsageError("give either --seed N or --seeds LIST, not both (--seeds 0,1,2 runs every seed)")
    try:
        seeds = list(dict.fromkeys(int(v) for v in text.split(",") if v.strip()))
    except ValueError:
        raise UsageError(f"--seeds '{text}' must be comma-separated integers, e.g. 0,1,2") from None
    if not seeds or any(not 0 <= s < 2**32 for s in seeds):
        raise UsageError(f"--seeds '{text}' must be integers from 0 to 2**32 - 1, e.g. 0,1,2")
    return seeds


def _names(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


#: one more than the highest fold number --folds accepts (protocols have tens of folds, not millions)
MAX_FOLD = 10_000


def parse_folds(text: str | None) -> list[int] | None:
    """'0-2,5' → [0, 1, 2, 5]; None → all folds."""
    if text is None:
        return None
    folds = []
    try:
        for part in (v.strip() for v in text.split(",") if v.strip()):
            lo, _, hi = part.partition("-")
            first, last = int(lo), int(hi or lo)
            if not 0 <= first <= last < MAX_FOLD:
                raise UsageError(f"--folds '{part}' must be fold numbers from 0 to {MAX_FOLD - 1}, low to high, "
                                 "e.g. 0-2,5")
            folds.extend(range(first, last + 1))
    except ValueError:
        raise UsageError(f"--folds '{text}' must be fold numbers or ranges, e.g. 0-2,5") from None
    if not folds:
        raise UsageError(f"--folds '{text}' names no fold; use e.g. 0-2,5")
    return folds


def split_names(text: str | None) -> list[str]:
    return [v.strip() for v in (text or "").split(",") if v.strip()]


def filter_options(command):
    """--methods and --datasets (report, plot, check): show only these cells."""
    command = click.option("--datasets", "dataset_filter", default=None,
                           help="only these datasets, comma-separated (e.g. kinematics,bank)")(command)
    return click.option("--methods", "method_filter", default=None,
                        help="only these methods, comma-separated (e.g. gfc,alc: the GFC paper's Table 1 "
                             "without the variants run beside it)")(command)


def backend_options(command):
    """--backend and --scheduler (run, reproduce)."""
    command = click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
                           help="with --backend dask: run on this dask scheduler's workers (default: start a "
                                "LocalCluster of --jobs workers here); see docs/cluster.md")(command)
    return click.option("--backend", default="local", show_default=True, type=click.Choice(["local", "dask"]),
                        help="where tasks run: local worker processes, or a dask.distributed cluster")(command)


def worker_options(command):
    """--jobs, --threads and --timeout (run, reproduce)."""
    command = click.option("--timeout", default=None, help="per-task time limit, e.g. 30m (at most 30 days)")(command)
    command = click.option("--threads", default=None, type=int,
                           help="threads per worker (default: cores // jobs)")(command)
    return click.option("--jobs", default=None, type=int, envvar="RFBENCH_JOBS", show_envvar=True,
                        help="parallel worker processes (default: one per core with one thread each, the faster "
                             "placement measured for every built-in method; a run of methods registered with "
                             "placement: threads gets one worker with every core; with --threads, "
                             "cores // threads)")(command)


def device_options(command):
    """--device, --gpu-slots and --gpu-beside (run, reproduce)."""
    command = click.option("--gpu-beside", is_flag=True,
                           help="with the GPU: the device tasks run on --gpu-slots workers of their own beside the "
                                "--jobs CPU workers, instead of holding one of them (a device task's worker mostly "
                                "waits on the GPU)")(command)
    command = click.option("--gpu-slots", default=None, type=int,
                           help=f"with the GPU: at most this many device tasks at once, each worker that runs one "
                                f"capped to 0.9 / slots of its memory; the other workers run CPU tasks meanwhile "
                                f"(default {DEFAULT_GPU_SLOTS})")(command)
    return click.option("--device", default=None, type=click.Choice(["cpu", "cuda", "auto"]),
                        help="where the methods that can use a GPU compute: cpu (the NumPy path), cuda (refused "
                             "without torch or a GPU: pip install torch, docs/device.md) or auto (the GPU when there is "
                             "one); default: the device setting ($RFBENCH_DEVICE, config file), else cpu; the "
                             "other methods run on the CPU")(command)


def run_config(*, jobs=None, threads=None, timeout=None, seeds=None, fold_list=None, backend="local", scheduler=None,
               data_dir=None, strict=False, device=None, gpu_slots=None, gpu_beside=False):
    """The RunConfig of a command's options, validated once (one line for what is wrong); ``device``
    left out: the device setting. The note of ``--device auto`` falling back to the CPU is shown here,
    once."""
    from rfbench import config as settings
    from rfbench.execution.runconfig import RunConfig

    origin = ""
    if device is None:
        device, origin = settings.device_setting()
    try:
        config = RunConfig(jobs=jobs, threads=threads, timeout_s=parse_duration(timeout),
                           seeds=tuple(seeds) if seeds is not None else None, folds=parse_folds(fold_list),
                           backend=backend, scheduler=scheduler, data_dir=data_dir, strict=strict, device=device,
                           gpu_slots=DEFAULT_GPU_SLOTS if gpu_slots is None else gpu_slots, gpu_beside=gpu_beside)
    except UsageError as exc:
        if origin and str(exc).startswith("--device"):
            raise UsageError(f"{exc} (the device setting: {device}, from {origin})") from None
        raise
    if config.device_note:
        click.echo(f"note: {config.device_note}", err=True)
    return config


def no_mirror_note(data_dir: str | None) -> str | None:
    """A line saying that no dataset mirror is set, or None: without one, every dataset read from the
    mirror counts as "without data offline", which is not true of a machine that has the mirror."""
    from rfbench.data import loader

    if loader.data_dirs(data_dir):
        return None
    return ("note: no dataset mirror is set (--data-dir or RFBENCH_DATA_DIR), so datasets read from it count "
            "as without data offline")


def check_jobs(backend: str, scheduler: str | None) -> None:
    """--jobs sizes workers started here; an existing cluster has its own."""
    from click.core import ParameterSource

    if (backend == "dask" and scheduler is not None
            and click.get_current_context().get_parameter_source("jobs") == ParameterSource.COMMANDLINE):
        raise UsageError("--jobs sizes the workers started here; with --scheduler the dask cluster's workers set how "
                         "many tasks run at once (leave --jobs out)")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rfbench")
def cli():
    """Benchmark learned and random feature methods under one nested-CV protocol."""


@cli.command()
@click.option("--suite", default=None, help=f"dataset suite (default: {DEFAULT_SUITE} when no --datasets)")
@click.option("--datasets", "dataset_names", default=None,
              help="comma-separated dataset names, data files (csv, tsv, arff, parquet; with --target) or openml:ID")
@click.option("--methods", "method_names", default="rff-gauss,lgbm", show_default=True,
              help="comma-separated method names (see `rfbench methods`) or estimators as package.module:Class")
@click.option("--features", default="100,500", show_default=True, help="feature budgets n (each at most 10^6)")
@click.option("--protocol", "protocol_name", default="cv", show_default=True,
              type=click.Choice(["cv", "splits", "holdout", "fixed", "published"]),
              help="evaluation protocol: nested cv (GFC), random splits (GBRFF), one holdout (SALSA), the "
                   "dataset's own train/test split repeated over --repeats random-feature draws (EERF; datasets "
                   "with a fixed split, e.g. eerf-adult), or the dataset's published fixed splits (the 10 90/10 "
                   "splits of suite uci; error: test RMSE on the target as stored)")
@click.option("--outer-folds", default=10, show_default=True, type=int)
@click.option("--inner-folds", default=5, show_default=True, type=int)
@click.option("--repeats", default=None, type=int,
              help="random splits (--protocol splits, default 20), random-feature draws (--protocol fixed, default "
                   "20) or the first published splits to run (--protocol published, default 10: all)")
@click.option("--test-size", default=0.3, show_default=True, type=float, help="test fraction (splits/holdout)")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--seeds", "seed_list", default=None,
              help="run the protocol once per seed into the same --out, e.g. 0,1,2 (the report pools the seeds and "
                   "shows their spread apart from the folds'); replaces --seed")
@click.option("--folds", "fold_list", default=None,
              help="run only these outer folds / splits, e.g. 0-2 (the splits are unchanged; default: all)")
@worker_options
@click.option("--max-samples", default=None, type=int, help="seeded subsample of each dataset (quick runs)")
@click.option("--out", default="runs/latest", show_default=True, help="results directory (resumable)")
@click.option("--data-dir", default=None, help="dataset mirror directory (default: $RFBENCH_DATA_DIR)")
@click.option("--strict", is_flag=True, help="fail instead of skipping datasets that cannot be obtained")
@click.option("--target", default=None, help="the column to predict of the data files / openml:ID in --datasets")
@click.option("--task", "task_type", default=None, type=click.Choice(["regression", "classification"]),
              help="task of the data files / openml:ID in --datasets (default: inferred from the target)")
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="a user registry (YAML with methods:/datasets: sections) that extends the built-in one; "
                   "repeatable (also $RFBENCH_REGISTRY)")
@click.option("--no-report", is_flag=True, help="do not print the table at the end")
@click.option("--quiet", is_flag=True, help="no progress bar")
@click.option("--dry-run", is_flag=True,
              help="show the tasks that would run, those done in --out and the estimated core-hours; run nothing, "
                   "write nothing")
@backend_options
@device_options
def run(suite, dataset_names, method_names, features, protocol_name, outer_folds, inner_folds, repeats,
        test_size, seed, seed_list, fold_list, jobs, threads, timeout, max_samples, out, data_dir, strict, no_report,
        quiet, dry_run, target, task_type, registry_files, backend, scheduler, device, gpu_slots, gpu_beside):
    """Run the protocol for datasets × methods × n_features; resumes an existing --out."""
    # the report (scipy.stats, ~0.5 s) is imported to render it: the first progress line comes before
    # that import (the method checks import scipy.stats through sklearn later anyway)
    from rfbench import registry
    from rfbench.data.loader import resolve_dataset_names
    from rfbench.execution import runner
    from rfbench.protocol import Protocol
    from rfbench.store import load_results

    out = results_dir_option(out)
    reg = registry.load(registry_files)      # this command's registry, extended by its command line below
    check_jobs(backend, scheduler)
    names = split_names(dataset_names)
    if dataset_names is not None and not names:
        raise UsageError("--datasets is empty; name datasets (see `rfbench datasets list`), or leave the option "
                         f"out to run --suite (default {DEFAULT_SUITE})")
    if suite is not None and not suite.strip():
        raise UsageError("--suite is empty; name a suite (see `rfbench datasets list`), or leave the option out")
    # data files and openml:ID → registered; a dry run fetches nothing: openml:ID is listed unresolved
    reg, names = resolve_dataset_names(reg, names, target, task_type, fetch=not dry_run)
    for n in names:
        reg.dataset(n)
    if suite or not names:
        suite_names = [d.name for d in reg.suite(suite or DEFAULT_SUITE)]
        outside = [n for n in names if n not in suite_names]
        if outside:
            raise UsageError(f"--datasets {','.join(outside)} not in suite '{suite}' (it has "
                             f"{', '.join(suite_names)}); drop --suite or those names")
        names = [n for n in suite_names if not names or n in names]
    reg, methods = registry.resolve_method_names(reg, split_names(method_names))    # package.module:Class → registered
    if not methods:
        raise UsageError("--methods is empty")
    seeds = parse_seeds(seed_list, seed)
    protocol = Protocol(protocol_name, outer_folds, inner_folds, seeds[0], test_size=test_size,
                        max_samples=max_samples, **({} if repeats is None else {"repeats": repeats}))
    budgets = parse_int_list(features, "--features", MAX_FEATURES)
    config = run_config(jobs=jobs, threads=threads, timeout=timeout, seeds=seeds, fold_list=fold_list,
                        backend=backend, scheduler=scheduler, data_dir=data_dir, strict=strict, device=device,
                        gpu_slots=gpu_slots, gpu_beside=gpu_beside)
    if dry_run:
        table = runner.dry_run(names, methods, budgets, protocol, out, config, registry=reg)
        click.echo(runner.render_dry_run(table, out), nl=False)
        return
    run_dir = runner.run(names, methods, budgets, protocol, out, config, registry=reg, progress=not quiet,
                         command="rfbench " + " ".join(sys.argv[1:]))
    df = load_results([run_dir.path], protocol=protocol.key())     # this run's protocol, every seed in --out
    counts = df["status"].value_counts().to_dict()
    click.echo(f"results: {run_dir.path / 'results.csv'} ({', '.join(f'{v} {k}' for k, v in counts.items())})")
    if not no_report and (df["status"] == "done").any():
        import shlex

        from rfbench.reporting import report

        click.echo(report.render(df, "text", registry=reg, shapes=run_dir.recorded_shapes()))
        click.echo(f"files: {run_dir.path / 'results.csv'} (one record per task in {run_dir.records_dir}/); "
                   f"LaTeX: rfbench report {shlex.quote(out)} --format latex")


@cli.command("report")
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
                   "(seed, fold) over every seed's folds)")
@click.option("--layout", default=None, type=click.Choice(["default", "gp"]),
              help="gp: the GP / kernel-learning papers' table (Yang et al. 2015, Wilson et al. 2016): per n, "
                   "datasets as rows grouped by size (small, intermediate, ...) with (m, d), methods as columns, "
                   "mean ± std over the splits, bold = the best mean and every method not significantly worse "
                   "(paired t-test unless --test is given), then an average rank row; html adds the "
                   "critical-difference diagram and error against time per size group. Default: the default layout "
                   "(with --all: each spec's own layout, which --layout replaces)")
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
@filter_options
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="a user registry (YAML with methods:/datasets: sections) that extends the built-in one, for the "
                   "shape (m, d) of its datasets; repeatable (also $RFBENCH_REGISTRY)")
def report_cmd(dirs, fmt, output, all_specs, alpha, compare, ttest, layout, relative, names, label, latex_width,
               width, protocol_key, method_filter, dataset_filter, registry_files):
    """Error/walltime tables in the papers' layout with t-tests (bold) and Wilcoxon tests.

    DIRS are results directories, or spec names (see `rfbench reproduce --list`): a spec's results are
    its results directory when that holds records here, else the baseline that ships with rfbench
    (built from the project's committed results), read without writing anything; a line on stderr
    says which."""
    from rfbench import registry
    from rfbench.experiments import sources
    from rfbench.reporting import cells, report
    from rfbench.store import atomic_write_text, load_results, recorded_shapes

    reg = registry.load(registry_files)
    display_names = report.parse_names(names)      # a bad --names file is refused before anything is read
    if all_specs:
        from rfbench.experiments import html_page
        from rfbench.experiments.spec import all_specs as every_spec

        if dirs or fmt != "html" or output is None or method_filter or dataset_filter:
            raise UsageError("--all writes a page per spec: give --format html --output DIR, and no DIRS, "
                             "--methods or --datasets")
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
    width = report.terminal_width() if width is None else width
    label = label or "tab:" + re.sub(r"[^A-Za-z0-9:._-]+", "-", Path(dirs[0]).resolve().name)
    layout = layout or "default"
    if layout == "gp" and compare:
        raise UsageError("--compare adds Wilcoxon rows across n to the default layout; the gp layout has no Wilcoxon "
                         "table (its average rank row and the critical-difference diagram compare the methods): "
                         "leave out --layout gp or --compare")
    if relative and layout != "gp":
        raise UsageError("--relative (RMSE / std(y)) goes with --layout gp; add --layout gp")
    results = cells.select(load_results(sources_read, protocol_key), _names(method_filter), _names(dataset_filter))
    if relative:
        from rfbench.reporting import gp_table

        results = gp_table.relative_to_target_std(results, reg)
    options = dict(names=display_names, width=width, label=label,
                   latex_width=report.parse_length(latex_width), html_fragment=fmt == "html", registry=reg,
                   shapes=recorded_shapes(sources_read))
    if layout == "gp":
        from rfbench.reporting import gp_table

        # the papers compare on the same fixed splits: paired, unless --test says otherwise
        given = click.get_current_context().get_parameter_source("ttest")
        test = ttest if given == click.core.ParameterSource.COMMANDLINE else "paired"
        text = gp_table.render(results, fmt, alpha, test, **options)
    else:
        comparisons = report.parse_comparisons(compare)
        report.check_comparisons(results, comparisons)
        text = report.render(results, fmt, alpha, comparisons, test=ttest, **options)
    if fmt == "html":
        text = _html_page(dirs, sources_read, spec_of_arg, results, text, protocol_key, _names(method_filter),
                          _names(dataset_filter), reg, layout, alpha)
    if fmt in ("text", "markdown"):
        from rfbench.reporting.report import fmt_walltime
        from rfbench.store import run_walltime

        for d in dict.fromkeys(d for d in sources_read if not sources.is_shipped(d)):   # named twice: one run
            seconds, n = run_walltime(d)
            if n:
                line = (f"Wall time of the run in {d}: {fmt_walltime(seconds)} over {n} invocation(s) that ran tasks "
                        "(each from its start to the last task it finished).")
                text += "\n" + (report.wrap(line, width) if fmt == "text" else line) + "\n"
    if output_path is not None:
        atomic_write_text(output_path, text)
        click.echo(f"wrote {output}")
    else:
        click.echo(text, nl=False)


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


def _html_page(dirs, read, specs: dict, results, fragment: str, protocol_key, methods, datasets, reg,
               layout: str = "default", alpha: float = 0.05) -> str:
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
                                    datasets=datasets, registry=reg, layout=layout, alpha=alpha)


@cli.command("status")
@click.argument("targets", nargs=-1)
@click.option("--data-dir", default=None, help="dataset mirror directory (default: $RFBENCH_DATA_DIR)")
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="the user registry (YAML with methods:/datasets: sections) the run used")
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


@cli.command("check")
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
    from rfbench.experiments.spec import spec_of_results
    from rfbench.store import load_results

    reg = registry.load()
    read, specs = _resolve_dirs(dirs, reg)
    if spec is None:
        sp = specs.get(0) or spec_of_results(dirs[0], reg)
        if sp is None:
            raise UsageError(f"no spec has {dirs[0]} as its results directory; name one with --spec")
    else:
        sp = check.load_spec(spec, reg)
    given = [specs[i].results if i in specs else Path(d).resolve() for i, d in enumerate(dirs)]
    if sp.results in given:      # the spec's own directory: the columns it reads elsewhere come too
        extra = [(d, sources.source(d)) for d in sp.also_reads if d not in given]
        extra = [(d, src) for d, src in extra if src is not None]
        if extra and any(i in specs for i in range(len(dirs))):
            click.echo(f"{sp.name} also reads: {sources.describe(extra)}", err=True)
        read = [*read, *(src for _, src in extra)]
    results = load_results(read, protocol_key or sp.protocol_key, missing_ok=protocol_key is None)
    table, text, _ = reproduce.check_text(sp, results, _names(method_filter), _names(dataset_filter), registry=reg)
    click.echo(text, nl=False)
    if (check.paper_cells(table)["status"] == "fail").any():
        sys.exit(1)


@cli.command("reproduce")
@click.argument("specs", nargs=-1)
@click.option("--all", "all_specs", is_flag=True, help="every experiment spec in bench/")
@click.option("--list", "list_only", is_flag=True,
              help="show every spec's cells: published / offline / present / pass / fail / not comparable")
@click.option("--check-only", is_flag=True, help="do not run; check and write the outputs")
@click.option("--summary", default=None, metavar="FILE",
              help="write the generated reproduction section into FILE (docs/results.md) and results/README.md")
@click.option("--ci", is_flag=True, help="run each spec's fast CI configuration and compare it with its reference")
@click.option("--write-reference", is_flag=True, help="with --ci: write the reference from this run (review it first)")
@click.option("--out", default=None, help="with --ci: where the CI runs go (default: a temporary directory)")
@click.option("--folds", "fold_list", default=None, help="run only these outer folds / splits, e.g. 0-2")
@click.option("--methods", "method_list", default=None, help="run only these of the spec's methods, e.g. alc-q1,alc-q2")
@click.option("--datasets", "dataset_list", default=None, help="run only these of the spec's datasets")
@worker_options
@click.option("--data-dir", default=None, help="dataset mirror directory (default: $RFBENCH_DATA_DIR)")
@click.option("--quiet", is_flag=True, help="no progress bar")
@click.option("--dry-run", is_flag=True,
              help="show each spec's tasks that would run, those done in its results directory and the estimated "
                   "core-hours; run, check and write nothing")
@backend_options
@device_options
def reproduce_cmd(specs, all_specs, list_only, check_only, summary, ci, write_reference, out, fold_list,
                  method_list, dataset_list, jobs, threads, timeout, data_dir, quiet, dry_run, backend, scheduler,
                  device, gpu_slots, gpu_beside):
    """Run what each experiment spec declares, then check it against the published table and
    write check.txt and report.md into the spec's results directory (resumable)."""
    from rfbench import registry
    from rfbench.experiments import reproduce
    from rfbench.experiments.spec import load_spec, spec_paths

    if specs and not all_specs:
        names = list(specs)
    elif all_specs or list_only or summary:
        names = [str(p) for p in spec_paths()]
    else:
        raise UsageError("name one or more specs (see `rfbench reproduce --list`) or give --all")
    if out is not None:
        out = results_dir_option(out)
    parse_duration(timeout)         # a bad --timeout is refused before the specs are read
    reg = registry.load()
    loaded = [load_spec(n, reg) for n in names]
    check_jobs(backend, scheduler)
    note = no_mirror_note(data_dir)
    if summary and note:     # the summaries are committed: their offline counts must be the mirror's
        raise UsageError("--summary needs the dataset mirror (its offline counts are written into the summary); "
                         "set RFBENCH_DATA_DIR or --data-dir")
    if dry_run and (ci or check_only or list_only or summary):
        raise UsageError("--dry-run shows what a run would do; leave out --ci, --check-only, --list and --summary")
    runs = not (ci or check_only or list_only or summary)
    # one config for every spec, validated once; --ci runs locally on the CPU, and --check-only, --list
    # and --summary run nothing: their device and workers are not asked for
    config = run_config(jobs=jobs, threads=threads, timeout=timeout, fold_list=fold_list, backend=backend,
                        scheduler=scheduler, data_dir=data_dir, device=device if runs else "cpu",
                        gpu_slots=gpu_slots, gpu_beside=gpu_beside and runs)
    if dry_run:
        for spec in loaded:
            click.echo(f"== {spec.name}: {spec.title}")
            click.echo(reproduce.dry_run_spec(spec, config, registry=reg, only_methods=_names(method_list),
                                              only_datasets=_names(dataset_list)))
        if note:
            click.echo(note, err=True)
        return
    if ci and (backend != "local" or scheduler is not None):
        raise UsageError("--ci runs its fast configurations locally; leave out --backend and --scheduler")
    if ci and device not in (None, "cpu"):
        raise UsageError("--ci compares exactly with references computed on the CPU; leave out --device (the device "
                         "code against them, within each table's tolerance: python -m rfbench.experiments.regress --device "
                         "torch-cpu SPEC)")
    if ci:
        from rfbench.experiments import regress

        failed = 0
        for spec in loaded:
            if spec.ci is None:
                raise UsageError(f"spec {spec.name} has no ci block; add one (see rfbench/experiments/spec.py) to regress it")
            target = Path(out) / spec.name if out else None
            failed += regress.run_and_compare(spec, target, write_reference=write_reference, jobs=jobs,
                                              threads=threads)
        sys.exit(1 if failed else 0)
    if not (check_only or list_only or summary):
        for spec in loaded:
            # the first line says where the results go (a spec's results directory is the spec's choice)
            click.echo(f"== {spec.name}: {spec.title} → {spec.results}", err=True)
            reproduce.run_spec(spec, config, registry=reg, progress=not quiet,
                               command="rfbench " + " ".join(sys.argv[1:]), only_methods=_names(method_list),
                               only_datasets=_names(dataset_list))
    checked = [reproduce.check_spec(spec, data_dir, reg) for spec in loaded]
    if list_only:
        click.echo(reproduce.list_table(checked), nl=False)
        if note:
            click.echo(note, err=True)
        return
    for c in checked:
        written = reproduce.write_outputs(c, reg)
        if not summary:
            said = (f"; read from the {c.sources[0][1]} (no records in {c.spec.results}), nothing written"
                    if c.shipped else "; wrote " + ", ".join(map(str, written)) if written else "")
            click.echo(f"{c.spec.name}: " + ", ".join(f"{v} {k}" for k, v in c.counts.items() if v is not None)
                       + said)
    if summary:
        reproduce.replace_section(Path(summary), reproduce.summary_markdown(checked))
        readme = registry.ROOT / "results" / "README.md"
        from rfbench.store import atomic_write_text

        every = loaded if len(loaded) == len(spec_paths()) else [load_spec(str(p), reg) for p in spec_paths()]
        atomic_write_text(readme, reproduce.results_readme(every))
        click.echo(f"wrote {summary} and {readme}")


@cli.command("plot")
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
@filter_options
@click.pass_context
def plot_cmd(ctx, dirs, kind, fmt, output, alpha, cd_test, protocol_key, spec_name, method_filter, dataset_filter):
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

        if dirs or kind != "all" or method_filter or dataset_filter:
            raise UsageError("--spec plots the spec's declared figures from its own results: give no DIRS, --kind, "
                             "--methods or --datasets")
        from rfbench.experiments import sources

        spec = load_spec(spec_name)
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
    results = cells.select(load_results(read, protocol_key), _names(method_filter), _names(dataset_filter))
    written, notes = plot.make_plots(results, kind, output_dir(output), fmt, alpha, cd_test)
    for note in notes:
        click.echo(f"rfbench plot: {note}", err=True)
    for path in written:
        click.echo(f"wrote {path}")


@cli.command("publish")
@click.option("--output", required=True, help="the directory of the site (created if missing, not its parent)")
@click.option("--alpha", default=0.05, show_default=True, type=ALPHA, help="significance level (leaderboards, pages)")
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="extra datasets/methods/suites file (repeatable)")
@click.option("--jobs", default=None, type=click.IntRange(min=1),
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


@cli.command("baselines")
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
    from rfbench.reporting.report import terminal_width

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


@cli.group("compare")
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
@click.option("--data-dir", default=None, help="dataset mirror directory (default: $RFBENCH_DATA_DIR)")
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="a user registry (YAML with methods:/datasets: sections) that extends the built-in one")
@click.option("--no-report", is_flag=True, help="do not print the comparison at the end")
@click.option("--quiet", is_flag=True, help="no progress bar")
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
    from rfbench.reporting import report

    return report.terminal_width() if width is None else width


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
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="the user registry the run used (its datasets and methods), as given to `compare run`")
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
    c = compare.compare(list(dirs), split_names(against) or None, _names(method_list), _names(dataset_list),
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
def compare_plot(dirs, against, method_list, dataset_list, kind, fmt, output, alpha, cd_test):
    """Figures of your run beside the baselines, on the folds every shown method has finished (the
    same rows as `rfbench compare report`)."""
    from rfbench.experiments import compare
    from rfbench.reporting import plot

    output = output_dir(output)
    c = compare.compare(list(dirs), split_names(against) or None, _names(method_list), _names(dataset_list))
    written, notes = plot.make_plots(c.frame, kind, output, fmt, alpha, cd_test,   # nothing to plot: one line
                                     time_caveat=c.time_caveat)
    for note in c.notes[:1]:
        click.echo(note, err=True)
    for note in notes:
        click.echo(f"rfbench compare plot: {note}", err=True)
    for path in written:
        click.echo(f"wrote {path}")


@cli.group("datasets")
def datasets_group():
    """List, describe and fetch registered datasets."""


@datasets_group.command("list")
@click.option("--suite", default=None)
@click.option("--data-dir", default=None, help="dataset mirror directory (default: $RFBENCH_DATA_DIR)")
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="a user registry (YAML with methods:/datasets: sections) that extends the built-in one; "
                   "repeatable (also $RFBENCH_REGISTRY)")
def datasets_list(suite, data_dir, registry_files):
    """Registered datasets and where each would be read from here (what is present, not hashed)."""
    from tabulate import tabulate

    from rfbench import registry
    from rfbench.data.loader import where_found

    reg = registry.load(registry_files)
    items = reg.suite(suite) if suite is not None else list(reg.datasets.values())
    rows = [[d.name, d.task, f"{d.m}×{d.d}", ",".join(d.suites), where_found(d, data_dir),
             d.generator or "", d.openml_id or ""] for d in items]
    click.echo(tabulate(rows, headers=["name", "task", "shape", "suites", "source here", "generator", "openml"]))


@datasets_group.command("info")
@click.argument("name")
@click.option("--data-dir", default=None)
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="a user registry (YAML with methods:/datasets: sections) that extends the built-in one; "
                   "repeatable (also $RFBENCH_REGISTRY)")
def datasets_info(name, data_dir, registry_files):
    import os

    from rfbench import registry
    from rfbench.data.loader import data_dirs, mirror_root, where_found

    d = registry.load(registry_files).dataset(name)
    lines = [f"name: {d.name} (paper: {d.paper})", f"task: {d.task}", f"shape: {d.m} × {d.d}",
             f"target: {d.target}", f"suites: {', '.join(d.suites)}"]
    lines.append(f"source here: {where_found(d, data_dir)}")
    if d.file:
        lines.append(f"file: {d.file} ({'present' if Path(d.file).is_file() else 'not found'}), format "
                     f"{d.file_format}, sha256 in {d.origin}: {d.sha256 or '(none: the file is not checked)'}")
    if d.mirror:
        root = mirror_root(d, data_dir)
        dirs = data_dirs(data_dir)
        for f, sha in d.mirror.files:
            where = (f"{root / f} (present)" if root is not None
                     else f"not found in {os.pathsep.join(map(str, dirs))}" if dirs
                     else "no mirror set (RFBENCH_DATA_DIR or --data-dir)")
            lines.append(f"mirror: {f}: {where}, sha256 in the registry: {sha or '(none: not checked)'}")
    if d.splits:
        found = next((Path(r) / d.splits.file for r in data_dirs(data_dir) if (Path(r) / d.splits.file).is_file()),
                     Path(d.splits.file) if Path(d.splits.file).is_file() else None)
        lines.append(f"published splits (--protocol published): {d.splits.file}: "
                     f"{f'{found} (present)' if found else 'not found'}, sha256 in the registry: "
                     f"{d.splits.sha256 or '(none: not checked)'}")
    if d.aliases:
        lines.append(f"aliases: {', '.join(d.aliases)}")
    if d.generator:
        lines.append(f"generator: {d.generator} (seed 0)")
    if d.openml_id:
        lines.append(f"openml: id {d.openml_id}, target {d.openml_target}")
    if d.url:
        lines.append(f"url: {d.url}")
    if d.notes:
        lines.append(f"notes: {d.notes}")
    click.echo("\n".join(lines))


@datasets_group.command("fetch")
@click.argument("names", nargs=-1)
@click.option("--suite", default=None)
@click.option("--data-dir", default=None)
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="a user registry (YAML with methods:/datasets: sections) that extends the built-in one; "
                   "repeatable (also $RFBENCH_REGISTRY)")
def datasets_fetch(names, suite, data_dir, registry_files):
    """Obtain datasets (mirror, generator or download) and verify them."""
    from rfbench import registry
    from rfbench.data import load
    from rfbench.errors import DataUnavailable

    reg = registry.load(registry_files)
    targets = list(names) + ([d.name for d in reg.suite(suite)] if suite else [])
    if not targets:
        raise UsageError("name datasets to fetch or give --suite")
    failed = 0
    for name in targets:
        try:
            loaded = load(reg.dataset(name), data_dir)
            click.echo(f"{name}: {loaded.X.shape[0]}×{loaded.X.shape[1]} from {loaded.source} ({loaded.detail})")
        except DataUnavailable as exc:
            failed += 1
            click.echo(f"{name}: {exc}", err=True)
    if failed:
        sys.exit(1)


@cli.command("methods")
@click.option("--registry", "registry_files", multiple=True, metavar="FILE",
              help="a user registry (YAML with methods:/datasets: sections) that extends the built-in one; "
                   "repeatable (also $RFBENCH_REGISTRY)")
@click.option("--width", type=WIDTH, default=None,
              help="characters per line (default: the terminal's width; no limit when not a terminal); 0: no limit, "
                   "with each method's paper and whole description")
def methods_cmd(registry_files, width):
    """List the registered methods, one line each."""
    import textwrap

    from tabulate import tabulate

    from rfbench import registry

    reg = registry.load(registry_files)
    methods = list(reg.methods.values())
    gfc = registry.gfc_note(None, reg)          # which GFC row is which, whatever the width
    from rfbench.reporting.report import terminal_width

    width = terminal_width() if width is None else width
    if width == 0:            # --width 0, a file or a pipe: whole lines
        rows = [[m.name, ", ".join(sorted(m.estimators)), m.paper, m.description] for m in methods]
        click.echo(tabulate(rows, headers=["name", "native tasks", "paper", "description"]))
        if gfc:
            click.echo("\n" + gfc)
        return
    if width < 40:
        raise UsageError(f"--width {width} is too narrow for the list; give 40 or more, or 0 for no limit")
    short = {"regression": "reg", "classification": "clf", "multiclass": "multi"}
    rows = [[m.name, ",".join(short.get(t, t) for t in sorted(m.estimators)), m.description] for m in methods]
    name_w, task_w = (max(len(r[i]) for r in [["name", "tasks"], *rows]) for i in (0, 1))
    room = width - name_w - task_w - 4              # two spaces between columns

    def fit(text: str) -> str:
        """The text, cut at a word before ``room`` with an ellipsis when longer."""
        text = " ".join(text.split())
        if len(text) <= room:
            return text
        cut = text[:room - 1].rsplit(" ", 1)[0] if " " in text[:room - 1] else text[:room - 1]
        return cut.rstrip(" ,;:(") + "…"

    lines = [f"{'name':<{name_w}}  {'tasks':<{task_w}}  summary", f"{'-' * name_w}  {'-' * task_w}  {'-' * room}"]
    lines += [f"{n:<{name_w}}  {t:<{task_w}}  {fit(d)}".rstrip() for n, t, d in rows]
    click.echo("\n".join(lines))
    click.echo(textwrap.fill("tasks: reg = regression, clf = classification, multi = multiclass; each method's "
                             "paper and whole description: rfbench methods --width 0", width))
    if gfc:
        # continuation lines indented: none may start with a method's name, as the table's rows do
        click.echo(textwrap.fill(gfc, width, break_on_hyphens=False, subsequent_indent="  "))


class Terminated(KeyboardInterrupt):
    """SIGTERM (what a batch scheduler sends before it kills a job), handled as Ctrl-C is: the
    workers are stopped, unfinished tasks' claims released, finished records kept."""


def _terminate(signum, frame):
    raise Terminated


def main(argv=None):
    import signal

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        try:
            cli.main(args=argv, prog_name="rfbench", standalone_mode=False)
        finally:
            if (dask_pool := sys.modules.get("rfbench.execution.dask_pool")) is not None:
                dask_pool.silence_until_exit()
    except UsageError as exc:
        click.echo(f"rfbench: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort as exc:     # click turns KeyboardInterrupt (and so SIGTERM) into Abort
        if isinstance(exc.__cause__, Terminated):
            click.echo("rfbench: terminated (SIGTERM); finished tasks are saved, re-run the same command to resume",
                       err=True)
            sys.exit(143)
        click.echo("rfbench: interrupted; finished tasks are saved, re-run the same command to resume", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"rfbench: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except Terminated:
        click.echo("rfbench: terminated (SIGTERM); finished tasks are saved, re-run the same command to resume",
                   err=True)
        sys.exit(143)
    except KeyboardInterrupt:
        click.echo("rfbench: interrupted; finished tasks are saved, re-run the same command to resume", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
