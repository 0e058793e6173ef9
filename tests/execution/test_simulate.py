"""rfbench.execution.simulate: the runner's dispatch on a virtual clock, against placements worked
out by hand, an independent list scheduler and the brute-force optimum of tiny cases."""

import itertools
import random

import pytest

from rfbench.execution import runner
from rfbench.execution.simulate import fluid_bound, makespan, simulate, work_items
from rfbench.execution.tasks import WorkItem


def test_hand_worked_placements():
    # 3 workers, [5, 4, 3, 3, 3]: 5, 4, 3 start at 0; the 3 ending at 3 frees a worker for the
    # fourth (3 → 6), the 4 ending at 4 one for the fifth (4 → 7)
    assert makespan([5, 4, 3, 3, 3], jobs=3) == 7.0
    # the classic case where longest first is not optimal: {3, 3} {2, 2, 2} would take 6
    assert makespan([3, 3, 2, 2, 2], jobs=2) == 7.0
    # shortest first on 2 workers: 1, 1 | 2, 2 | ... 1+2=3, 1+2=3, then 4 on one: 7
    assert makespan([1, 1, 2, 2, 4], jobs=2) == 7.0
    assert makespan([4, 2, 2, 1, 1], jobs=2) == 5.0
    # one GPU slot, 2 workers: the second device item waits for the slot although a worker is idle
    # from 2 to 4 (the CPU items run 0-1 and 1-2 beside the first)
    assert makespan([4, 4, 1, 1], [True, True, False, False], jobs=2, gpu_slots=1) == 8.0
    # the planned order is kept across the kinds: the CPU item planned first takes a worker first
    items, secs = work_items([1, 4, 4], [False, True, True])
    placed = simulate(items, secs, jobs=1, gpu_slots=1)
    assert [placed.spans[i] for i in items] == [(0.0, 1.0), (1.0, 5.0), (5.0, 9.0)]
    assert placed.peak_device == 1
    assert makespan([], jobs=4) == 0.0


def _list_schedule(seconds, on_device, jobs, slots):
    """An independent list scheduler: at each moment a worker is free, the first item (in order)
    allowed to start (a device item only while fewer than ``slots`` run) starts."""
    now, running, queue = 0.0, [], list(range(len(seconds)))     # running: (end, is_device)
    while queue or running:
        started = True
        while started and len(running) < jobs:
            started = False
            on_gpu = sum(d for _, d in running)
            for k, i in enumerate(queue):
                if not on_device[i] or slots is None or on_gpu < slots:
                    running.append((now + seconds[i], on_device[i]))
                    del queue[k]
                    started = True
                    break
        now = min(e for e, _ in running)
        running = [(e, d) for e, d in running if e > now]
    return now


def _optimum(seconds, jobs):
    """The least makespan over every assignment of the items to the workers (no GPU)."""
    best = float("inf")
    for assign in itertools.product(range(jobs), repeat=len(seconds)):
        loads = [0.0] * jobs
        for s, w in zip(seconds, assign, strict=True):
            loads[w] += s
        best = min(best, max(loads))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_matches_an_independent_list_scheduler_and_the_bounds(seed):
    rng = random.Random(seed)
    n, jobs = rng.randint(1, 7), rng.randint(1, 3)
    seconds = [float(rng.randint(1, 9)) for _ in range(n)]
    on_device = [rng.random() < 0.4 for _ in range(n)]
    slots = rng.choice([None, 1, 2])
    assert makespan(seconds, on_device, jobs, slots) == _list_schedule(seconds, on_device, jobs, slots)
    assert makespan(seconds, on_device, jobs, slots) >= fluid_bound(seconds, on_device, jobs, slots)
    # without the GPU: Graham's bounds against the brute-force optimum, for every order of the items
    opt = _optimum(seconds, jobs)
    for perm in set(itertools.permutations(seconds)):
        assert opt <= makespan(list(perm), jobs=jobs) <= (2 - 1 / jobs) * opt + 1e-12
    lpt = makespan(sorted(seconds, reverse=True), jobs=jobs)
    assert lpt <= (4 / 3 - 1 / (3 * jobs)) * opt + 1e-12


def test_simulates_the_runners_own_order():
    """The runner's ordering function is applied to real work items: interleaved puts every
    (dataset, method)'s first fold before the second folds."""
    items = [WorkItem(d, "rff", f, (100,)) for d in ("a", "b") for f in range(2)]
    secs = {i: (10.0 if i.fold == 1 else 1.0) for i in items}
    placed = simulate(items, secs, jobs=2, order=runner.interleaved)
    assert placed.spans[items[0]][0] == placed.spans[items[2]][0] == 0.0      # both first folds at once
    assert placed.makespan == 11.0


def test_dispatch_order_measures_longest_first_against_the_order_before(tmp_path):
    """bench/perf/dispatch_order.py on the committed records: longest first is never slower than
    the order before, never under the fluid bound."""
    import json

    from tests.bench_scripts import bench_script

    module = bench_script("dispatch_order")
    module.main(["--output", str(tmp_path / "order.json")])
    out = json.loads((tmp_path / "order.json").read_text())
    for run, per_workers in out["cpu"].items():
        for workers, row in per_workers.items():
            assert row["fluid_bound"] - 1e-9 <= row["longest_first"], (run, workers)
            assert row["gain_h"] >= -1e-9, (run, workers)
    assert out["gpu"]["torgo suite"]["longest_first"] <= out["gpu"]["torgo suite"]["planned (rfbench run)"]


def test_device_items_beside_the_cpu_workers():
    """--gpu-beside: the device items on slots of their own, the CPU items on the --jobs workers."""
    # 1 worker, 1 slot: beside, the CPU items run while the first device item does (0-1, 1-2);
    # held, everything is one after the other
    assert makespan([4, 4, 1, 1], [True, True, False, False], jobs=1, gpu_slots=1, beside=True) == 8.0
    assert makespan([4, 4, 1, 1], [True, True, False, False], jobs=1, gpu_slots=1) == 10.0
    # 2 workers, 1 slot: four 3 s CPU items and a 2 s device item: 6 beside (two rounds of CPU items,
    # the device item on its own), 8 held (the device item waits for a worker after two rounds)
    seconds, on_device = [3, 3, 3, 3, 2], [False] * 4 + [True]
    assert makespan(seconds, on_device, jobs=2, gpu_slots=1, beside=True) == 6.0
    assert makespan(seconds, on_device, jobs=2, gpu_slots=1) == 8.0
    # at most jobs CPU items in flight beside, though a device lane is idle
    items, secs = work_items([1, 1, 1], [False, False, False])
    assert simulate(items, secs, jobs=1, gpu_slots=2, beside=True).makespan == 3.0
