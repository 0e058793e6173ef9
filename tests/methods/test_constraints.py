"""Every estimator of the built-in registry declares scikit-learn ``_parameter_constraints``
(rfbench/methods/constraints.py): one for each constructor parameter, satisfied by every
configuration the registry runs, and a bad value is one InvalidParameterError (a ValueError) from
``fit`` before any data is looked at."""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_param_validation

from rfbench import registry
from rfbench.contract import shares_budgets
from rfbench.methods import constraints as cons
from rfbench.methods import device
from rfbench.methods.rff import RFFRegressor


def _builtin():
    return {name: m for name, m in registry.load().methods.items() if m.origin == "built-in"}


def _estimator(path: str, method: str) -> type:
    # imported directly, not through Method.estimator_class: a method whose optional extra is not
    # installed (xrfm, svgp) is refused there, but its estimator module imports without it
    return registry.import_estimator(path, method)


def _classes() -> list[type]:
    found = {}
    for method in _builtin().values():
        for path in method.estimators.values():
            cls = _estimator(path, method.name)
            found[f"{cls.__module__}.{cls.__name__}"] = cls
    return [found[k] for k in sorted(found)]


CLASSES = _classes()


def test_the_registry_has_the_twenty_seven_estimators():
    assert len(CLASSES) == 27


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_parameter_has_a_constraint_and_bad_values_are_refused(cls):
    est = cls()
    assert set(cls._parameter_constraints) == set(est.get_params(deep=False))
    # the check scikit-learn's check_estimator runs: a value of no valid type, then one out of
    # range for each constraint, each refused by fit with the informative message
    check_param_validation(cls.__name__, est)


def _runner_arguments(cls, params: dict) -> dict:
    """What the runner passes (rfbench/execution/tasks.py fold_task), over the registry's parameters."""
    folds = [(np.arange(5, 20), np.arange(5)), (np.arange(0, 15), np.arange(15, 20))]
    common = {"n_features": 100, "cv": folds, "random_state": 2**31 - 2, "n_jobs": 2}
    if shares_budgets(cls):
        common.update(budgets=[100, 500], n_features=500)
    return {**common, **params}


def test_every_registry_configuration_satisfies_the_constraints():
    checked = 0
    for method in _builtin().values():
        settings = [method.params] + [method.params_for(ds) for ds in method.per_dataset]
        for path in method.estimators.values():
            cls = _estimator(path, method.name)
            for params in settings:
                cls(**_runner_arguments(cls, params))._validate_params()
                checked += 1
    assert checked >= len(_builtin())


def test_a_bad_value_is_one_line_before_the_data_is_read():
    with pytest.raises(InvalidParameterError) as caught:
        RFFRegressor(kernel="gauss").fit(None, None)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError) and "\n" not in message
    assert message == ("The 'kernel' parameter of RFFRegressor must be a str among "
                       "{'gaussian', 'laplace', 'cauchy'}. Got 'gauss' instead.")


@pytest.mark.parametrize("value", ["cpu", "cuda", "cuda:0", "cuda:3", "torch-cpu",
                                   "gpu", "CUDA", "cuda:", "cuda:x", "", None, 1, "mps"])
def test_the_device_constraint_is_check_device(value):
    try:
        device.check_device(value)
        valid = True
    except ValueError:
        valid = False
    assert cons.Device().is_satisfied_by(value) == valid


def test_counts_are_ints_not_bools():
    positive = cons.positive_int()
    assert positive.is_satisfied_by(1) and positive.is_satisfied_by(np.int64(3))
    assert not positive.is_satisfied_by(True) and not positive.is_satisfied_by(2.0)
    assert not positive.is_satisfied_by(0)


def test_grid_values_are_checked_in_fit():
    np.testing.assert_array_equal(cons.positive_values("lambdas", [[1e-3], [1.0]]), [1e-3, 1.0])
    for bad in ((), (1.0, 0.0), (np.nan,)):
        with pytest.raises(ValueError, match="lambdas must be a non-empty list of positive values"):
            cons.positive_values("lambdas", bad)
