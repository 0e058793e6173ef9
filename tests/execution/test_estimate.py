"""The task-time estimator of a method whose one fit serves every budget whatever n (budget-free:
gp, gp-sod, xrfm, hgb): its finished tasks record the shares n / Σn of one fit, and the work left is
that fit once per fold, whatever budgets are asked."""

import importlib

import pandas as pd
import pytest

from rfbench import registry
from rfbench.execution import estimate, runner
from rfbench.execution.tasks import WorkItem

REG = registry.load()


def _shared(dataset, method, fold, whole, budgets=(100, 500), predict=0.0):
    """The records the runner writes for one fit of ``whole`` seconds shared by ``budgets``."""
    total = sum(budgets)
    return [{"dataset": dataset, "method": method, "n_features": n, "fold": fold,
             "fit_s": whole * (n / total), "total_s": whole * (n / total) + predict,
             "cpu_s": whole * (n / total) + predict} for n in budgets]


def test_a_budget_free_fit_is_counted_once_per_fold_and_shared_among_the_budgets_asked():
    done = pd.DataFrame(_shared("uci-sml", "gp-sod", 0, 600.0) + _shared("uci-sml", "gp-sod", 1, 660.0))
    est = estimate.task_seconds(done, registry=REG)
    assert est.budget_free == frozenset({"gp-sod"})
    # each cell: the whole fit (the median over the folds), not the share its budget recorded
    cells, known = est([("uci-sml", "gp-sod", 100), ("uci-sml", "gp-sod", 500)])
    assert list(cells) == pytest.approx([630.0, 630.0]) and known == [True, True]
    # both budgets of a fold left: they share one fit (100/600 and 500/600 of it)
    both, _ = est.of_tasks([("uci-sml", "gp-sod", 100, 2), ("uci-sml", "gp-sod", 500, 2)])
    assert list(both) == pytest.approx([105.0, 525.0])
    # n = 100 alone: the whole fit (the former estimate said 105 s, a sixth of it)
    alone, _ = est.of_tasks([("uci-sml", "gp-sod", 100, 3)])
    assert list(alone) == pytest.approx([630.0])
    # the runner's items: one fit each, whatever their budgets
    items = [WorkItem("uci-sml", "gp-sod", 4, (100,)), WorkItem("uci-sml", "gp-sod", 5, (100, 500))]
    assert list(runner.item_seconds(est)(items)) == pytest.approx([630.0, 630.0])


def test_budget_free_tasks_fitted_apart_keep_their_own_whole_fits():
    """n = 100 and n = 500 run in two invocations: each record holds its own whole fit (fit_s not
    the shares of one time), so they are not added."""
    done = pd.DataFrame(_shared("uci-sml", "gp-sod", 0, 600.0, budgets=(100,))
                        + _shared("uci-sml", "gp-sod", 0, 640.0, budgets=(500,)))
    cells, _ = estimate.task_seconds(done, registry=REG)([("uci-sml", "gp-sod", 100), ("uci-sml", "gp-sod", 500)])
    assert list(cells) == pytest.approx([600.0, 640.0])


def test_a_method_whose_budget_matters_keeps_its_shares():
    """LightGBM shares one fit of 500 trees among n = 100 and 500 too, but a fit for 100 alone is
    100 trees: its records' shares stay the per-budget estimate, and an item is their sum."""
    done = pd.DataFrame(_shared("uci-sml", "lgbm", 0, 600.0))
    est = estimate.task_seconds(done, registry=REG)
    assert est.budget_free == frozenset()
    assert list(est([("uci-sml", "lgbm", 100), ("uci-sml", "lgbm", 500)])[0]) == pytest.approx([100.0, 500.0])
    alone, _ = est.of_tasks([("uci-sml", "lgbm", 100, 1)])
    assert list(alone) == pytest.approx([100.0])
    items = [WorkItem("uci-sml", "lgbm", 1, (100, 500))]
    assert list(runner.item_seconds(est)(items)) == pytest.approx([600.0])


def test_without_folds_the_records_are_taken_as_they_are():
    done = pd.DataFrame(_shared("uci-sml", "gp-sod", 0, 600.0)).drop(columns="fold")
    cells, _ = estimate.task_seconds(done, registry=REG)([("uci-sml", "gp-sod", 100)])
    assert list(cells) == pytest.approx([100.0])


def test_the_budget_free_methods_are_those_that_share_one_fit_whatever_n():
    from rfbench import contract

    free = {m for m, meth in REG.methods.items() if meth.cost_scaling.get("budget_free")}
    assert free == {"gp", "gp-sod", "xrfm", "hgb"}
    for m in free:       # the class itself, imported without the extras xrfm's fit needs
        module, name = REG.method(m).estimators["regression"].split(":")
        assert contract.shares_budgets(getattr(importlib.import_module(module), name))
