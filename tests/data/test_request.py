"""resolve_run: a run's suite, datasets and methods resolved by the library, without click; and the
functions compare run and reproduce resolve their names with."""

import pytest

from rfbench import registry
from rfbench.data.request import (
    RunRequest,
    chosen_datasets,
    chosen_methods,
    resolve_methods,
    resolve_run,
)
from rfbench.errors import UsageError


@pytest.fixture(scope="module")
def reg():
    return registry.load()


def test_default_suite_expanded(reg):
    request = resolve_run(reg, methods=["rff-gauss", "lgbm"])
    assert isinstance(request, RunRequest)
    assert request.datasets == tuple(d.name for d in reg.suite(registry.DEFAULT_SUITE))
    assert request.methods == ("rff-gauss", "lgbm")
    assert request.registry is reg


def test_named_suite_expanded_and_filtered_in_suite_order(reg):
    names = [d.name for d in reg.suite("synthetic")]
    assert resolve_run(reg, suite="synthetic", methods=["lgbm"]).datasets == tuple(names)
    assert resolve_run(reg, suite="synthetic", datasets=names[::-1], methods=["lgbm"]).datasets == tuple(names)
    assert resolve_run(reg, suite="synthetic", datasets=[names[1]], methods=["lgbm"]).datasets == (names[1],)


def test_datasets_without_suite_kept_as_named(reg):
    request = resolve_run(reg, datasets=["delta-ailerons", "breiman-generated"], methods=["lgbm"])
    assert request.datasets == ("delta-ailerons", "breiman-generated")


def test_names_outside_the_suite_refused(reg):
    with pytest.raises(UsageError, match=r"^--datasets delta-ailerons not in suite 'synthetic' \(it has "):
        resolve_run(reg, suite="synthetic", datasets=["delta-ailerons", "breiman-generated"], methods=["lgbm"])


@pytest.mark.parametrize("kwargs, message", [
    ({"datasets": []}, "--datasets is empty; "),
    ({"suite": " "}, "--suite is empty; "),
    ({"methods": []}, "--methods is empty"),
    ({"suite": "nope"}, "unknown suite 'nope'"),
    ({"datasets": ["nope-set"]}, "nope-set"),
])
def test_empty_and_unknown_refused(reg, kwargs, message):
    with pytest.raises(UsageError) as exc:
        resolve_run(reg, **{"methods": ["lgbm"], **kwargs})
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_module_class_method_registered_in_a_new_registry(reg):
    request = resolve_run(reg, datasets=["breiman-generated"], methods=["sklearn.linear_model:Ridge"])
    assert request.methods == ("sklearn.linear_model.Ridge",)
    assert "sklearn.linear_model.Ridge" in request.registry.methods
    assert "sklearn.linear_model.Ridge" not in reg.methods


def test_resolve_methods_registers_module_classes_and_refuses_none_in_one_line(reg):
    extended, names = resolve_methods(reg, ["rff-gauss", "sklearn.linear_model:Ridge"])
    assert names == ("rff-gauss", "sklearn.linear_model.Ridge") and "sklearn.linear_model.Ridge" in extended.methods
    with pytest.raises(UsageError, match=r"^--methods is empty; name your estimator$"):
        resolve_methods(reg, [], "--methods is empty; name your estimator")


def test_chosen_names_keep_the_given_list_s_order_accept_aliases_and_refuse_others_in_one_line(reg):
    """compare run's datasets (a baseline's) and reproduce's (a spec's): a subset of a given list."""
    held = ["uci-machine", "uci-concreteslump", "wine"]
    assert chosen_datasets(reg, None, held, "baseline b") == tuple(held)
    assert chosen_datasets(reg, ["wine", "uci-slump"], held, "baseline b") == ("uci-concreteslump", "wine")
    assert chosen_datasets(None, ["wine"], held, "spec s") == ("wine",)
    with pytest.raises(UsageError, match=r"^--datasets: uci-cancer not in baseline b \(they have uci-machine, "
                                         r"uci-concreteslump, wine\)$"):
        chosen_datasets(reg, ["uci-cancer", "wine"], held, "baseline b")
    with pytest.raises(UsageError, match="^--datasets names nothing"):
        chosen_datasets(reg, [], held, "baseline b")
    assert chosen_methods(["lgbm", "gfc"], ["gfc", "alc", "lgbm"], "spec s") == ("gfc", "lgbm")
    with pytest.raises(UsageError, match=r"^--methods: rff-gauss not in spec s \(they have gfc\)$"):
        chosen_methods(["rff-gauss"], ["gfc"], "spec s")
