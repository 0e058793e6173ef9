"""What to run, resolved from the names a user gives: :func:`resolve_run` turns a suite, dataset
names (registered names, aliases, data files, ``openml:ID``) and method names (registered names,
``package.module:Class``) into one :class:`RunRequest`, the registry with the command line's
entries added and the checked dataset and method names that ``execution.runner.run`` and
``dry_run`` take. The commands only parse their options and print; a library user calls it the
same way, without click::

    request = resolve_run(registry.load(), suite="synthetic", methods=["rff-gauss"])
    runner.run(request.datasets, request.methods, [100], protocol, out, registry=request.registry)

``compare run`` (a baseline's datasets) and ``reproduce`` (a spec's) resolve their names with the
same functions: :func:`resolve_methods` and :func:`chosen_datasets` / :func:`chosen_methods`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rfbench.data.loader import resolve_dataset_names
from rfbench.errors import UsageError
from rfbench.registry import DEFAULT_SUITE, Registry, resolve_method_names, subset


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
    registry, method_names = resolve_methods(registry, methods)
    return RunRequest(registry, tuple(names), method_names)


def resolve_methods(registry: Registry, names, empty: str = "--methods is empty") -> tuple[Registry, tuple[str, ...]]:
    """(the registry with them, the method names) of the methods a user names: registered names as
    they are, ``package.module:Class`` registered (:func:`rfbench.registry.resolve_method_names`);
    none is the one line ``empty``."""
    registry, method_names = resolve_method_names(registry, list(names))
    if not method_names:
        raise UsageError(empty)
    return registry, tuple(method_names)


def chosen_datasets(registry: Registry | None, names, held, where: str) -> tuple[str, ...]:
    """The datasets of ``held`` (registered names: a baseline's, a spec's) that ``names`` asks for, in
    ``held``'s order (None: all of them); an alias of ``registry`` counts as its dataset's name. An
    empty request, or a name outside ``held``, is one line (``--datasets: X not in WHERE (they have ...)``)."""
    held = list(held)
    if names is not None and registry is not None:
        names = [n if n in held or registry.canonical_name(n) not in held else registry.canonical_name(n)
                 for n in names]
    return tuple(subset(names, held, "--datasets", where))


def chosen_methods(names, held, where: str) -> tuple[str, ...]:
    """The methods of ``held`` that ``names`` asks for, in ``held``'s order (None: all of them); one
    line as :func:`chosen_datasets` otherwise."""
    return tuple(subset(names, held, "--methods", where))
