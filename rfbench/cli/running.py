"""rfbench run, and what the commands that run tasks share (run, reproduce, compare run)."""

from __future__ import annotations

import sys

import click

from rfbench.cli.options import (
    backend_options,
    data_dir_option,
    device_options,
    parse_duration,
    parse_folds,
    parse_int_list,
    parse_seeds,
    quiet_option,
    registry_option,
    results_dir_option,
    split_names,
    worker_options,
)
from rfbench.errors import UsageError
from rfbench.execution.runconfig import DEFAULT_GPU_SLOTS, MAX_FEATURES
from rfbench.registry import DEFAULT_SUITE


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


@click.command()
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
@data_dir_option()
@click.option("--strict", is_flag=True, help="fail instead of skipping datasets that cannot be obtained")
@click.option("--target", default=None, help="the column to predict of the data files / openml:ID in --datasets")
@click.option("--task", "task_type", default=None, type=click.Choice(["regression", "classification"]),
              help="task of the data files / openml:ID in --datasets (default: inferred from the target)")
@registry_option()
@click.option("--no-report", is_flag=True, help="do not print the table at the end")
@quiet_option
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
    from rfbench.data.request import resolve_run
    from rfbench.execution import runner
    from rfbench.protocol import Protocol
    from rfbench.store import load_results

    out = results_dir_option(out)
    reg = registry.load(registry_files)      # this command's registry, extended by its command line below
    check_jobs(backend, scheduler)
    # a dry run fetches nothing: openml:ID is listed unresolved
    request = resolve_run(reg, suite=suite,
                          datasets=None if dataset_names is None else split_names(dataset_names),
                          methods=split_names(method_names), target=target, task=task_type, fetch=not dry_run)
    reg, names, methods = request.registry, list(request.datasets), list(request.methods)
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
    config = config.resolved(methods, reg)      # jobs and threads, once: the runner gets them as numbers
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


