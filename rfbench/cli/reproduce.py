"""rfbench reproduce: the experiment specs in bench/."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rfbench.cli.options import (
    backend_options,
    data_dir_option,
    device_options,
    name_list,
    parse_duration,
    quiet_option,
    results_dir_option,
    worker_options,
)
from rfbench.cli.running import check_jobs, no_mirror_note, run_config
from rfbench.errors import UsageError


@click.command("reproduce")
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
@data_dir_option()
@quiet_option
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
            click.echo(reproduce.dry_run_spec(spec, config, registry=reg, only_methods=name_list(method_list),
                                              only_datasets=name_list(dataset_list)))
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
                                              threads=threads, registry=reg)
        sys.exit(1 if failed else 0)
    if not (check_only or list_only or summary):
        for spec in loaded:
            # the first line says where the results go (a spec's results directory is the spec's choice)
            click.echo(f"== {spec.name}: {spec.title} → {spec.results}", err=True)
            reproduce.run_spec(spec, config, registry=reg, progress=not quiet,
                               command="rfbench " + " ".join(sys.argv[1:]), only_methods=name_list(method_list),
                               only_datasets=name_list(dataset_list))
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


