"""The import structure of the rfbench package, read from its import statements (at module level
and inside functions): the package is layered (docs/architecture.md), a module imports only its own
layer and the layers below it, and no module imports another that imports it back."""

import ast
import importlib
import importlib.util
import pkgutil
import re
import tomllib
from pathlib import Path

import pytest

import rfbench

PACKAGE_DIR = Path(rfbench.__file__).resolve().parent

#: the layers, lowest first, and where each module belongs: a package of rfbench (its modules with
#: it) or a module at the top of it. A module imports its own layer and the layers of lower rank only;
#: layers of one rank import nothing of each other (an estimator runs under any runner: scikit-learn's,
#: the user's, rfbench's; the store keeps the records of any run; the data layer loads for anyone).
RANK = {"shared": 0, "methods": 1, "data": 1, "store": 1, "execution": 2, "reporting": 3, "experiments": 4,
        "entry point": 5}
LAYERS = {
    # the shared definitions: errors, settings, protocols, registries, declared validation, the estimator
    # contract, provenance
    "rfbench": "shared", "rfbench.errors": "shared", "rfbench.formats": "shared", "rfbench.config": "shared", "rfbench.protocol": "shared",
    "rfbench.registry": "shared", "rfbench.schema": "shared", "rfbench.contract": "shared", "rfbench.provenance": "shared",
    "rfbench.methods": "methods", "rfbench.data": "data", "rfbench.store": "store",
    "rfbench.execution": "execution",
    "rfbench.reporting": "reporting",
    # the report's model and its renderers, one module per format (docs/architecture.md)
    "rfbench.reporting.table_model": "reporting", "rfbench.reporting.render": "reporting",
    "rfbench.experiments": "experiments",
    "rfbench.cli": "entry point",
}


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


#: the top-level import names of the optional extras (pyproject.toml's [project.optional-dependencies])
#: → the extra: a module that imports one at module level cannot be imported where that extra is not
#: installed, and that is no fault of the module (rfbench.methods.alc_torch, ridge_torch need [gpu])
OPTIONAL_IMPORTS = {"torch": "gpu", "dask": "dask", "distributed": "dask", "xrfm": "xrfm", "gpytorch": "gp"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module):
    """Every module imports; one whose import stops at a missing optional extra (the missing module is
    the extra itself, not something inside it or anything else) is skipped with that reason."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").partition(".")[0]
        if exc.name != top or top not in OPTIONAL_IMPORTS or importlib.util.find_spec(top) is not None:
            raise
        pytest.skip(f"{module} needs {top}, of the optional extra [{OPTIONAL_IMPORTS[top]}] "
                    f"(pip install 'rfbench[{OPTIONAL_IMPORTS[top]}]'), not installed here")


def test_the_optional_imports_are_the_optional_extras():
    """OPTIONAL_IMPORTS names only the extras that pyproject.toml declares, and every package of the
    [gpu], [dask], [xrfm] and [gp] extras (the test extra is installed wherever the tests run)."""
    project = tomllib.loads((PACKAGE_DIR.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert set(OPTIONAL_IMPORTS.values()) <= set(extras)
    for extra in ("gpu", "dask", "xrfm", "gp"):
        for requirement in extras[extra]:
            name = re.match(r"[A-Za-z0-9_.-]+", requirement).group()
            assert OPTIONAL_IMPORTS.get(name) == extra, (extra, requirement)


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


def layer_of(module: str) -> str | None:
    """The layer of a module: that of the longest name in LAYERS that is it or a package above it
    (the package rfbench itself is no package above its modules here)."""
    name = module
    while name not in LAYERS and "." in name:
        name = name.rpartition(".")[0]
    return LAYERS[name] if name in LAYERS and (name != "rfbench" or module == "rfbench") else None


def test_every_module_is_in_a_layer():
    """A new module at the top of the package, or a new subpackage, is placed in a layer on purpose."""
    assert not set(LAYERS) - set(MODULES), "LAYERS names a module that does not exist"
    assert set(LAYERS.values()) == set(RANK)
    outside = sorted(m for m in MODULES if layer_of(m) is None)
    assert not outside, f"in no layer (place them in LAYERS and docs/architecture.md): {', '.join(outside)}"


#: the folders of tests/: one per layer package (the shared definitions' tests in shared/), and project/
#: for the tests of the repository itself (these rules, the docs' links, the slow marks, the GPU script)
TEST_FOLDERS = {"shared", "methods", "data", "store", "execution", "reporting", "experiments", "cli", "project"}
TESTS_DIR = Path(__file__).resolve().parents[1]


def test_tests_are_laid_out_by_layer():
    """Every test file sits in the folder of the layer it tests (docs/development.md), none at the top."""
    assert {LAYER_FOLDER.get(layer, layer) for layer in RANK} | {"project"} == TEST_FOLDERS
    misplaced = sorted(str(p.relative_to(TESTS_DIR)) for p in TESTS_DIR.rglob("test_*.py")
                       if p.parent == TESTS_DIR or p.relative_to(TESTS_DIR).parts[0] not in TEST_FOLDERS)
    assert not misplaced, f"not in a layer's folder of tests/: {', '.join(misplaced)}"


#: a layer's folder of tests/ where it differs from the layer's name
LAYER_FOLDER = {"entry point": "cli"}


def test_no_module_imports_a_layer_above_its_own_nor_beside_it():
    wrong = []
    for module in sorted(MODULES):
        here = layer_of(module)
        for target, line in sorted(GRAPH[module].items()):
            there = layer_of(target)
            if there != here and RANK[there] >= RANK[here]:
                wrong.append(f"{module} ({here}) imports {target} ({there}) at "
                             f"{MODULES[module].relative_to(PACKAGE_DIR.parent)}:{line}")
    assert not wrong, "\n".join(wrong)


def test_methods_data_and_store_import_only_the_shared_definitions():
    """The bottom layers know nothing of what runs, reports or drives them."""
    found = sorted(f"{m} imports {t}" for m in MODULES if layer_of(m) in ("methods", "data", "store")
                   for t in GRAPH[m] if layer_of(t) not in ("shared", layer_of(m)))
    assert not found, found


def test_the_layer_packages_export_nothing():
    """A layer package's __init__ is its docstring: its modules are imported by their own names
    (rfbench.data keeps its entry point ``load``)."""
    for name in ("rfbench.execution", "rfbench.reporting", "rfbench.experiments", "rfbench.methods"):
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        assert all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in tree.body), name


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
    reaches the index, RunDir or the pooling rules (tests/store/test_store_modules.py runs them so)."""
    for module in ("rfbench.store.claims", "rfbench.store.record", "rfbench.store.atomic"):
        assert not _reaches(module) & {"rfbench.store", "rfbench.store.index", "rfbench.store.rundir",
                                       "rfbench.store.merging", "rfbench.store.walltime"}, module


def test_the_reader_sees_function_level_imports_and_packages():
    """The graph counts an import inside a function, and importing rfbench.data.X from outside the
    package runs rfbench.data (its __init__) too."""
    assert "rfbench.execution.runner" in GRAPH["rfbench.experiments.reproduce"]   # `from rfbench.execution import runner`
    assert "rfbench.data" in GRAPH["rfbench.experiments.reproduce"]      # `from rfbench.data.loader import ...`
    assert "rfbench.execution" in GRAPH["rfbench.experiments.reproduce"]  # the package of a module it imports
    assert "rfbench.data" not in GRAPH["rfbench.data.loader"]            # a module of the package itself
    assert "rfbench.execution" not in GRAPH["rfbench.execution.runner"]


#: private names imported across modules: none may be
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
