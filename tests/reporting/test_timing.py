"""The wall times of a busy machine say so: the one-thread records' CPU seconds against their wall time."""

import numpy as np
import pandas as pd
import pytest

from rfbench.errors import UsageError
from rfbench.registry import load as load_registry
from rfbench.reporting import plot, report, timing


def records(share=1.0, tasks=12, threads=1, device="cpu", wall=4.0):
    """Finished tasks of two methods on two datasets whose CPU seconds are ``share`` × threads × wall."""
    rng = np.random.default_rng(0)
    rows = []
    for k in range(tasks):
        rows.append({"dataset": ("kinematics", "bank")[k % 2], "method": ("a", "b")[(k // 2) % 2], "n_features": 100,
                     "fold": k // 4, "status": "done", "metric": "rmse100", "n_train": 90, "n_test": 10,
                     "task": "regression", "error": 5 + rng.normal(), "total_s": wall,
                     "cpu_s": share * threads * wall, "threads": threads, "device": device, "protocol": "cv-o3-i3"})
    return pd.DataFrame(rows)


def test_the_share_is_cpu_seconds_over_threads_times_wall_of_the_cpu_tasks():
    assert timing.cpu_share(records(0.5)) == (0.5, 12)
    assert timing.cpu_share(records(0.5, threads=2)) is None               # two threads may idle on any machine
    assert timing.cpu_share(records(0.5, device="cuda")) is None             # a GPU task's wall is its GPU's
    assert timing.cpu_share(records(0.5, tasks=timing.MIN_TASKS - 1)) is None  # too few to say
    assert timing.cpu_share(records(0.5, wall=0.5)) is None                  # short tasks say little
    assert timing.cpu_share(records(0.5).drop(columns="cpu_s")) is None      # records written before cpu_s
    mixed = pd.concat([records(0.2), records(0.9).assign(status="error")])  # only the finished tasks count
    assert timing.cpu_share(mixed)[0] == pytest.approx(0.2)


def test_a_busy_machines_wall_times_are_said_in_the_caption_and_the_time_figures_not_otherwise():
    reg = load_registry()
    waited = timing.busy_note(records(0.4))
    assert waited.startswith("wall times of a busy machine: the median task kept its core busy 40% of its wall time")
    assert timing.busy_note(records(timing.BUSY_SHARE)) is None
    text = report.render(records(0.4), "text", width=0, registry=reg)
    assert waited in text
    assert "busy machine" not in report.render(records(0.95), "text", width=0, registry=reg)
    (_, fig), = plot.figures(records(0.4), "pareto")[0]
    assert "busy machine" in fig._suptitle.get_text()
    (_, fig), = plot.figures(records(0.95), "pareto", time_caveat="walltimes mix machines")[0]
    assert "walltimes mix machines" in fig._suptitle.get_text() and "busy" not in fig._suptitle.get_text()


def test_in_cpu_seconds_puts_each_tasks_cpu_seconds_where_the_times_are_read_and_leaves_out_the_others():
    frame = records(0.25, tasks=4)
    frame.loc[1, "cpu_s"] = np.nan                                   # a record written before cpu_s
    frame.loc[2, "device"] = "cuda"                                  # the GPU's work is not the host's CPU time
    shown = timing.in_cpu_seconds(frame)
    assert shown["total_s"].tolist()[0] == 1.0 and shown["total_s"].isna().tolist() == [False, True, True, False]
    assert frame["total_s"].tolist() == [4.0] * 4                     # the caller's frame is left as it was
    assert timing.in_cpu_seconds(frame.drop(columns="device"), {("bank", "b", 100, 0, "cv-o3-i3")})[
        "total_s"].isna().tolist() == [False, True, False, True]       # keyed, as rfbench.store.device_tasks gives them
    with pytest.raises(UsageError, match="--time cpu: no finished task"):
        timing.in_cpu_seconds(frame.drop(columns="cpu_s"))


def test_time_cpu_reports_and_plots_the_cpu_seconds_under_their_own_name(tmp_path):
    reg = load_registry()
    shown = timing.in_cpu_seconds(records(0.25))
    text = report.render(shown, "text", width=0, registry=reg, time=timing.CPU)
    assert "CPU time" in text and "walltime" not in text and "busy machine" not in text
    assert " 1.00 s" in text                                           # 0.25 × 4 s of wall: the CPU seconds shown
    csv = report.render(shown, "csv", registry=reg, time=timing.CPU)
    assert "cpu_time_s" in csv.splitlines()[0] and "walltime_s" not in csv
    latex = report.render(shown, "latex", registry=reg, time=timing.CPU)
    assert "CPU time" in latex and "Walltime" not in latex
    (_, fig), = plot.figures(shown, "pareto", time=timing.CPU)[0]
    assert "Error against CPU time" in fig._suptitle.get_text() and "busy" not in fig._suptitle.get_text()
    assert any("CPU time" in ax.get_xlabel() for ax in fig.axes)
