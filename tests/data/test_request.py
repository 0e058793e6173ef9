"""resolve_run: a run's suite, datasets and methods resolved by the library, without click."""

import pytest

from rfbench import registry
from rfbench.data.request import RunRequest, resolve_run
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
