"""rfbench datasets list | info | fetch."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rfbench.cli.options import data_dir_option, registry_option
from rfbench.errors import UsageError


@click.group("datasets")
def datasets_group():
    """List, describe and fetch registered datasets."""


@datasets_group.command("list")
@click.option("--suite", default=None)
@data_dir_option()
@registry_option()
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
@data_dir_option(help=None)
@registry_option()
def datasets_info(name, data_dir, registry_files):
    import os

    from rfbench import registry
    from rfbench.data.loader import data_dirs, mirror_root, where_found

    d = registry.load(registry_files).dataset(name)
    lines = [f"name: {d.name} (paper: {d.paper})", f"task: {d.task}", f"shape: {d.m} × {d.d}",
             f"target: {d.target}", f"suites: {', '.join(d.suites)}"]
    found = where_found(d, data_dir)
    lines.append(f"source here: {found}")
    if found.startswith("absent"):
        lines.append(f"to supply it: {d.how_to_supply()}")
    if d.file:
        lines.append(f"file: {d.file} ({'present' if Path(d.file).is_file() else 'not found'}), format "
                     f"{d.file_format}, sha256 in {d.origin}: {d.sha256 or '(none: the file is not checked)'}")
    if d.mirror:
        root = mirror_root(d, data_dir)
        dirs = data_dirs(data_dir)
        for f, sha in d.mirror.files:
            where = (f"{root / f} (present)" if root is not None
                     else f"not found in {os.pathsep.join(map(str, dirs))}" if dirs
                     else f"no mirror set: {d.supply_hints()['mirror']}")
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
@data_dir_option(help=None)
@registry_option()
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
            loaded = load(reg.dataset(name), data_dir, registry=reg)
            click.echo(f"{name}: {loaded.X.shape[0]}×{loaded.X.shape[1]} from {loaded.source} ({loaded.detail})")
        except DataUnavailable as exc:
            failed += 1
            click.echo(f"{name}: {exc}", err=True)
    if failed:
        sys.exit(1)


