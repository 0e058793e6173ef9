"""The wall times of a busy machine say so: the one-thread records' CPU seconds against their wall time."""

import numpy as np
import pandas as pd
import pytest

from rfbench.registry import load as load_registry
from rfbench.reporting import busy, plot, report


def records(share=1.0, tasks=12, threads=1, device="cpu", wall=4.0):
    """Finished tasks of two methods on two datasets whose CPU seconds are ``share`` × threads × wall."""
    rng = np.random.default_rng(0)
    rows = []
    for k in range(tasks):
        rows.append({"dataset": ("kinematics", "bank")[k % 2], "method": ("a", "b")[(k // 2) % 2], "n_features": 100,
                     "fold": k // 4, "status": "done", "metric": "rmse100", "n_train": 90, "n_test": 10,
                     "task": "regression", "error": 5 + rng.normal(), "total_s": wall,
                     "cpu_s": share * threads * wall, "threads": threads, "device": device})
    return pd.DataFrame(rows)


def test_the_share_is_cpu_seconds_over_threads_times_wall_of_the_cpu_tasks():
    assert busy.cpu_share(records(0.5)) == (0.5, 12)
    assert busy.cpu_share(records(0.5, threads=2)) is None               # two threads may idle on any machine
    assert busy.cpu_share(records(0.5, device="cuda")) is None             # a GPU task's wall is its GPU's
    assert busy.cpu_share(records(0.5, tasks=busy.MIN_TASKS - 1)) is None  # too few to say
    assert busy.cpu_share(records(0.5, wall=0.5)) is None                  # short tasks say little
    assert busy.cpu_share(records(0.5).drop(columns="cpu_s")) is None      # records written before cpu_s
    mixed = pd.concat([records(0.2), records(0.9).assign(status="error")])  # only the finished tasks count
    assert busy.cpu_share(mixed)[0] == pytest.approx(0.2)


def test_a_busy_machines_wall_times_are_said_in_the_caption_and_the_time_figures_not_otherwise():
    reg = load_registry()
    waited = busy.busy_note(records(0.4))
    assert waited.startswith("wall times of a busy machine: the median task kept its core busy 40% of its wall time")
    assert busy.busy_note(records(busy.BUSY_SHARE)) is None
    text = report.render(records(0.4), "text", width=0, registry=reg)
    assert waited in text
    assert "busy machine" not in report.render(records(0.95), "text", width=0, registry=reg)
    (_, fig), = plot.figures(records(0.4), "pareto")[0]
    assert "busy machine" in fig._suptitle.get_text()
    (_, fig), = plot.figures(records(0.95), "pareto", time_caveat="walltimes mix machines")[0]
    assert "walltimes mix machines" in fig._suptitle.get_text() and "busy" not in fig._suptitle.get_text()
