"""What to run, resolved from the names a user gives: :func:`resolve_run` turns a suite, dataset
names (registered names, aliases, data files, ``openml:ID``) and method names (registered names,
``package.module:Class``) into one :class:`RunRequest`, the registry with the command line's
entries added and the checked dataset and method names that ``execution.runner.run`` and
``dry_run`` take. The commands only parse their options and print; a library user calls it the
same way, without click::

    request = resolve_run(registry.load(), suite="synthetic", methods=["rff-gauss"])
    runner.run(request.datasets, request.methods, [100], protocol, out, registry=request.registry)
"""

from __future__ import annotations

from dataclasses import dataclass

from rfbench.data.loader import resolve_dataset_names
from rfbench.errors import UsageError
from rfbench.registry import DEFAULT_SUITE, Registry, resolve_method_names


@dataclass(frozen=True)
class RunRequest:
    """The resolved inputs of a run: ``registry`` (the one given, with the data files, ``openml:ID``
    and ``package.module:Class`` named added), ``datasets`` and ``methods`` (registered names, in
    the order to run)."""

    registry: Registry
    datasets: tuple[str, ...]
    methods: tuple[str, ...]


def resolve_run(registry: Registry, *, suite: str | None = None, datasets=None, methods=(),
                target: str | None = None, task: str | None = None, fetch: bool = True) -> RunRequest:
    """The :class:`RunRequest` of a suite, datasets and methods as a user names them.

    ``datasets``: None when not given (then ``suite``, default :data:`DEFAULT_SUITE`, is run whole);
    an empty list is refused. With both, only the suite's datasets among ``datasets`` run, in the
    suite's order, and a name outside the suite is refused. ``target``/``task``: of the data files
    and ``openml:ID`` among ``datasets``; ``fetch=False`` (a dry run) registers ``openml:ID`` without
    contacting OpenML. Every error is one :class:`UsageError` line, naming the option it comes from."""
    names = list(datasets) if datasets is not None else []
    if datasets is not None and not names:
        raise UsageError("--datasets is empty; name datasets (see `rfbench datasets list`), or leave the option "
                         f"out to run --suite (default {DEFAULT_SUITE})")
    if suite is not None and not suite.strip():
        raise UsageError("--suite is empty; name a suite (see `rfbench datasets list`), or leave the option out")
    # data files and openml:ID → registered; without fetch, openml:ID is listed unresolved
    registry, names = resolve_dataset_names(registry, names, target, task, fetch=fetch)
    for n in names:
        registry.dataset(n)
    if suite or not names:
        suite_names = [d.name for d in registry.suite(suite or DEFAULT_SUITE)]
        outside = [n for n in names if n not in suite_names]
        if outside:
            raise UsageError(f"--datasets {','.join(outside)} not in suite '{suite}' (it has "
                             f"{', '.join(suite_names)}); drop --suite or those names")
        names = [n for n in suite_names if not names or n in names]
    registry, method_names = resolve_method_names(registry, list(methods))    # package.module:Class → registered
    if not method_names:
        raise UsageError("--methods is empty")
    return RunRequest(registry, tuple(names), tuple(method_names))
