"""The progress bar: a first line at once, resumed tasks counted as done, an ETA per (method, n)."""

import io
import re

import numpy as np
import pandas as pd
import pytest

from rfbench.execution import runner
from rfbench.execution.progress import Progress
from rfbench.execution.runconfig import RunConfig
from rfbench.execution.tasks import WorkItem
from rfbench.protocol import Protocol
from rfbench.registry import load as load_registry

SMALL = Protocol("cv", outer_folds=3, inner_folds=3, seed=0, max_samples=300)


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def planned(datasets, methods, folds):
    """Work items in the order ``runner.plan`` makes them (dataset, method, fold)."""
    return [WorkItem(d, m, f, (100,)) for d in datasets for m in methods for f in range(folds)]


def heterogeneous_seconds(items):
    """Two methods 100x apart, one dataset 3x slower than the other, ±30 % noise per task."""
    rng = np.random.default_rng(0)
    method = {"rff": 0.1, "lgbm": 10.0}
    dataset = {"small": 1.0, "big": 3.0, "mid": 1.5}
    return {i: method[i.method] * dataset[i.dataset] * rng.uniform(0.7, 1.3) for i in items}


def simulate(items, seconds, jobs=1):
    """Run ``items`` through Progress on ``jobs`` simulated workers (a free worker takes the next
    item, as the runner does); yield (tasks done, ETA, rough, true seconds left) after every task."""
    clock = FakeClock()
    bar = Progress(enabled=True, jobs=jobs, clock=clock, stream=io.StringIO())
    bar.start([(i.dataset, i.method, n) for i in items for n in i.budgets])
    queue, running, ends = list(items), {}, []   # running: item -> finish time
    while queue or running:
        while queue and len(running) < jobs:
            item = queue.pop(0)
            running[item] = bar.begin([(item.dataset, item.method, 100)]) + seconds[item]
        item = min(running, key=running.get)
        clock.now = running.pop(item)
        bar.update(f"{item.dataset} {item.method}", finished=[((item.dataset, item.method, 100), seconds[item])])
        ends.append((bar.done, *bar.eta(), clock.now))
    finish = ends[-1][-1]
    return [(done, eta, rough, finish - t) for done, eta, rough, t in ends]


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("datasets", [("small", "big"), ("big", "small", "mid")])
def test_eta_is_within_2x_of_the_truth_from_a_third_of_the_tasks_on(jobs, datasets):
    items = runner.interleaved(planned(datasets, ["rff", "lgbm"], 10))
    seconds = heterogeneous_seconds(items)
    steps = simulate(items, seconds, jobs)
    total = len(items)
    checked = 0
    for done, eta, rough, left in steps:
        if done * 3 < total or done > total * 0.9:    # the last seconds: relative errors say little
            continue
        checked += 1
        assert eta is not None and not rough, (done, eta)
        assert left / 2 <= eta <= 2 * left, f"at {done}/{total}: ETA {eta:.1f} s, truth {left:.1f} s"
    assert checked >= total // 2


def test_the_mean_time_eta_fails_that_case_in_the_planned_order():
    """The estimate this replaces (elapsed / done × tasks left, tasks by dataset, method, fold) is
    off by more than 2x at a third of the tasks: the case above is a real test."""
    items = planned(("small", "big"), ["rff", "lgbm"], 10)
    seconds = heterogeneous_seconds(items)
    third = -(-len(items) // 3)
    elapsed = sum(seconds[i] for i in items[:third])
    naive = elapsed / third * (len(items) - third)
    truth = sum(seconds[i] for i in items[third:])
    assert not truth / 2 <= naive <= 2 * truth


def test_eta_is_rough_until_every_method_has_a_time_and_shared_by_the_workers():
    clock = FakeClock()
    for jobs, expected in ((1, 4 * 10.0 + 5 * 0.1), (2, (4 * 10.0 + 5 * 0.1) / 2)):
        bar = Progress(enabled=False, jobs=jobs, clock=clock)
        bar.start([("d", "lgbm", 100)] * 5 + [("d", "rff", 100)] * 5)
        assert bar.eta() == (None, True)                        # nothing finished: no estimate
        bar.update("", finished=[(("d", "rff", 100), 0.1)])
        eta, rough = bar.eta()
        assert rough and eta == pytest.approx(max(9 * 0.1 / jobs, 0.1))   # lgbm: the global median, rough
        bar.update("", finished=[(("d", "lgbm", 100), 10.0)])
        assert bar.eta() == (pytest.approx(expected - 0.1 / jobs), False)
    # another dataset of the same (method, n) serves until the dataset has its own times
    bar = Progress(enabled=False, clock=clock)
    bar.start([("a", "rff", 100), ("b", "rff", 100), ("b", "rff", 100)])
    bar.update("", finished=[(("a", "rff", 100), 2.0)])
    assert bar.eta() == (pytest.approx(4.0), False)
    bar.update("", finished=[(("b", "rff", 100), 5.0)])
    assert bar.eta() == (pytest.approx(5.0), False)


def test_resumed_tasks_count_as_done_from_the_first_line():
    out = io.StringIO()
    bar = Progress(enabled=True, clock=FakeClock(), stream=out)
    bar.note("loading 2 datasets ...")
    assert out.getvalue() == "loading 2 datasets ...\n"
    bar.start([("d", "m", 100)] * 25, done=15, history=[(("d", "m", 100), 3.0)] * 15)
    first_bar = out.getvalue().splitlines()[1]
    assert " 15/40 tasks " in first_bar and "resuming" in first_bar
    assert "ETA 00:01:15" in first_bar                          # 25 tasks × 3 s recorded before
    bar.update("d m fold 0: done", finished=[(("d", "m", 100), 3.0)])
    assert " 16/40 tasks " in out.getvalue().splitlines()[-1]


def test_runner_prints_at_once_and_resumes_the_count(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    runner.run(["friedman-generated"], ["rff-gauss", "rff-cauchy"], [10], SMALL, str(out), RunConfig(folds=[0]), progress=False, registry=load_registry())
    capsys.readouterr()
    seen_before_loading, seen_before_checks = [], []
    real, real_checks = runner.available_datasets, runner.check_methods

    def spy(*args, **kwargs):
        seen_before_loading.append(capsys.readouterr().err)
        return real(*args, **kwargs)

    def spy_checks(*args, **kwargs):         # the method imports: the first line comes before them
        seen_before_checks.append(capsys.readouterr().err)
        return real_checks(*args, **kwargs)

    monkeypatch.setattr(runner, "available_datasets", spy)
    monkeypatch.setattr(runner, "check_methods", spy_checks)
    fold0 = pd.read_csv(out / "results.csv").set_index("method")["cpu_s"]     # the estimator's seconds (task_cost)
    runner.run(["friedman-generated"], ["rff-gauss", "rff-cauchy"], [10], SMALL, str(out), progress=True, registry=load_registry())
    assert seen_before_checks == ["6 tasks asked for (1 dataset × 2 methods × 1 n × 3 folds)\n"]
    assert seen_before_loading == ["loading 1 dataset (friedman-generated) ...\n"]
    lines = capsys.readouterr().err.splitlines()
    assert re.match(r"\[#+\.+\] 2/6 tasks .* ETA 00:00:\d\d  resuming: 2 of 6 tasks were done before", lines[0])
    assert [re.search(r"\] (\d)/6 tasks", line).group(1) for line in lines[1:]] == ["3", "4", "5", "6"]
    # the run order: longest first by the finished fold 0 of each method (equal estimates: fold by fold)
    first, second = sorted(["rff-gauss", "rff-cauchy"], key=lambda m: -fold0[m])
    assert [re.search(r"(rff-\w+) n=10 fold (\d)", line).groups() for line in lines[1:]] == [
        (first, "1"), (first, "2"), (second, "1"), (second, "2")]


def test_a_warning_in_the_middle_of_a_run_gets_a_line_of_its_own():
    """On a terminal, clear() blanks the bar's line before a warning (a worker's death) is printed: the
    warning starts its own line (it was appended to the bar's), and the next update draws the bar again."""

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    bar = Progress(True, 2, stream=term)
    bar.start([("d", "m", 10)] * 3)
    bar.update("fitting")
    bar.clear()
    print("warning: a worker died", file=term)
    bar.update("fitting again")
    bar.close()
    lines = term.getvalue().split("\n")
    assert lines[0].rsplit("\r", 1)[-1] == "warning: a worker died"
    assert lines[1].startswith("\r[")                     # the bar, drawn again below it
