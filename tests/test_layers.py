"""The import structure of the rfbench package, read from its import statements: no module imports
another that imports it back (at module level or inside a function), and the methods import nothing
of the layers that run and report them."""

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import rfbench

PACKAGE_DIR = Path(rfbench.__file__).resolve().parent

#: the layers that run tasks and report results: rfbench.methods imports none of them (an estimator
#: runs under any runner: scikit-learn's, the user's, rfbench's)
RUNNER_LAYER = {"rfbench.execution.runner", "rfbench.execution.tasks", "rfbench.execution.pool", "rfbench.execution.dask_pool", "rfbench.execution.progress",
                "rfbench.store"}
REPORTING_LAYER = {"rfbench.experiments.status", "rfbench.reporting.report", "rfbench.experiments.html_page", "rfbench.reporting.html_markup", "rfbench.reporting.plot",
                   "rfbench.experiments.check", "rfbench.experiments.reproduce", "rfbench.experiments.compare", "rfbench.experiments.baselines", "rfbench.experiments.regress",
                   "rfbench.reporting.figures_gbrff", "rfbench.reporting.cells", "rfbench.reporting.stats", "rfbench.experiments.spec", "rfbench.cli"}


def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The rfbench module that a dotted name (a module, or a name inside one) belongs to."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> dict[str, int]:
    """rfbench module → the line of the first statement in ``module`` that imports it, every import
    statement counted (module level and inside functions). Importing a module of another package
    also runs that package's ``__init__``: an edge to the package too."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str | None, line: int) -> None:
        if target is None or target == module:
            return
        found.setdefault(target, line)
        parent = target.rpartition(".")[0]
        while parent and parent != "rfbench" and not (module == parent or module.startswith(parent + ".")):
            found.setdefault(parent, line)
            parent = parent.rpartition(".")[0]

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rfbench":
                    add(_owner(alias.name), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, *([base] if base else [])])
            if base.split(".")[0] != "rfbench":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in MODULES else _owner(base), node.lineno)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module):
    importlib.import_module(module)


def test_the_walk_finds_every_module():
    found = {m.name for m in pkgutil.walk_packages(rfbench.__path__, "rfbench.")}
    assert found | {"rfbench"} == set(MODULES)


def test_no_import_cycle_among_rfbench_modules():
    lines = []
    for comp in _cycles():
        inside = set(comp)
        edges = [f"{m} -> {t} ({MODULES[m].relative_to(PACKAGE_DIR.parent)}:{line})"
                 for m in comp for t, line in sorted(GRAPH[m].items()) if t in inside]
        lines.append(f"cycle among {', '.join(comp)}:\n    " + "\n    ".join(edges))
    assert not lines, "\n".join(lines)


def _in(layer: set[str], module: str) -> bool:
    """Whether ``module`` is one of ``layer`` or a module of a package of it (rfbench.store.index)."""
    return any(module == m or module.startswith(m + ".") for m in layer)


def test_the_methods_import_nothing_of_the_runner_and_reporting_layers():
    assert not (RUNNER_LAYER | REPORTING_LAYER) - set(MODULES), "a layer names a module that does not exist"
    upward = [f"{m} imports {t} (line {line})" for m in MODULES if m.startswith("rfbench.methods")
              for t, line in sorted(GRAPH[m].items()) if _in(RUNNER_LAYER | REPORTING_LAYER, t)]
    assert not upward, "\n".join(upward)


def _reaches(module: str) -> set[str]:
    """Every module ``module`` imports, directly or through others."""
    seen, todo = set(), [module]
    while todo:
        for t in GRAPH[todo.pop()]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_the_store_s_claims_and_record_need_neither_the_index_nor_a_results_directory():
    """rfbench.store.claims works on a claim file's path, rfbench.store.record on one record: neither
    reaches the index, RunDir or the pooling rules (tests/test_store_modules.py runs them so)."""
    for module in ("rfbench.store.claims", "rfbench.store.record", "rfbench.store.atomic"):
        assert not _reaches(module) & {"rfbench.store", "rfbench.store.index", "rfbench.store.rundir",
                                       "rfbench.store.merging", "rfbench.store.walltime"}, module


def test_the_reader_sees_function_level_imports_and_packages():
    """The graph counts an import inside a function, and importing rfbench.data.X from outside the
    package runs rfbench.data (its __init__) too."""
    assert "rfbench.execution.runner" in GRAPH["rfbench.experiments.reproduce"]            # `from rfbench import runner` in run_spec
    assert "rfbench.data" in GRAPH["rfbench.experiments.reproduce"]              # `from rfbench.data.loader import ...`
    assert "rfbench.data" not in GRAPH["rfbench.data.loader"]        # a module of the package itself


#: private names imported across modules: none may be (the list was emptied by issue 37 item 2)
PRIVATE_IMPORTS_LEFT: set = set()


def test_no_module_imports_another_modules_private_names():
    found = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rfbench") and not node.level:
                found |= {(module, f"{node.module}.{a.name}") for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")}
    assert found <= PRIVATE_IMPORTS_LEFT, sorted(found - PRIVATE_IMPORTS_LEFT)


def _module_aliases(tree: ast.AST) -> dict[str, str]:
    """name → rfbench module, for the names a module binds to other rfbench modules (``import
    rfbench.x as y``, ``from rfbench import x``, ``from rfbench.a import b`` where b is a module)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES and a.asname:
                    out[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rfbench") and not node.level:
            for a in node.names:
                if f"{node.module}.{a.name}" in MODULES:
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def test_no_module_uses_another_modules_private_names():
    """Nor through the module: ``report._tex(...)`` in another module is the same reach inside."""
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = _module_aliases(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and aliases[node.value.id] != module and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                found.append(f"{module}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    assert not found, "\n".join(found)


def test_every_module_starts_with_a_docstring_saying_what_it_is_for():
    missing = [m for m, path in MODULES.items()
               if not (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "").strip()]
    assert not missing, f"modules without a docstring: {', '.join(missing)}"
