"""The device regression (rfbench.experiments.regress --device): a ci configuration run with the
device code on the CPU (torch-cpu) against the NumPy path's committed reference, each device cell
within the table's check tolerance, the CPU-only methods' tasks still exactly."""

import dataclasses
import json
import math

import pandas as pd
import pytest

from rfbench.experiments import check, regress
from rfbench.experiments.spec import Columns, load_spec
from rfbench.registry import load as load_registry


def _record(dataset="d1", method="dev", n=10, fold=0, error=1.5, status="done", device="torch-cpu", message=""):
    return {"dataset": dataset, "method": method, "n_features": n, "fold": fold, "status": status,
            "error": error if status == "done" else None, "message": message, "device": device,
            "params": json.dumps({"lambda": 0.01})}


def _reference(records) -> pd.DataFrame:
    """A reference as read from its CSV: strings only."""
    return pd.DataFrame([{"dataset": r["dataset"], "method": r["method"], "n_features": str(r["n_features"]),
                          "fold": str(r["fold"]), "error": repr(float(r["error"])),
                          "params": regress.canonical_params(r["params"])} for r in records])


def _spec(tmp_path, ci="ci: {reference: reference/tiny.csv}\n", name="tiny", extra=""):
    path = tmp_path / f"{name}.yaml"
    path.write_text("title: tiny device regression\nresults: results\n"
                    "run: {datasets: [friedman-generated], methods: [rff-gauss, rff-cauchy], features: [8]}\n"
                    "protocol: {name: cv, outer_folds: 2, inner_folds: 2, seed: 0}\n" + extra + ci)
    return load_spec(str(path), load_registry())


ON_DEVICE = {("d1", "dev"), ("d2", "dev")}


def _cells(table):
    return {(r.dataset, r.method, int(r.n_features)): r for r in table.itertuples(index=False)}


def _shifted(errors, delta, **kw):
    """Records of one cell whose fold errors are ``errors`` + ``delta`` (so the mean moves by delta)."""
    return [_record(fold=f, error=e + delta, **kw) for f, e in enumerate(errors)]


def test_a_device_cell_passes_just_inside_the_checks_tolerance_and_fails_just_outside(tmp_path):
    spec = _spec(tmp_path)                          # tolerance: stds = 2 (the default)
    errors = [1.0, 2.0, 3.0]                        # reference mean 2, std over the folds 1: tolerance 2
    ref = [_record(n=n, fold=f, error=e, device="cpu") for n in (10, 20) for f, e in enumerate(errors)]
    ours = _shifted(errors, 2.0 - 1e-9, n=10) + _shifted(errors, -(2.0 + 1e-6), n=20)
    table, cpu = regress.compare_device_tables(spec, _reference(ref), ours, ON_DEVICE, registry=load_registry())
    assert list(table.columns) == regress.DEVICE_COLUMNS and cpu.empty
    inside, outside = _cells(table)[("d1", "dev", 10)], _cells(table)[("d1", "dev", 20)]
    assert inside.tolerance == pytest.approx(2.0) == check.tolerance(spec, "d1", 2.0, 1.0, load_registry())
    assert (inside.status, inside.folds, inside.reference_mean, inside.reference_spread) == ("within", 3, 2.0, 1.0)
    assert inside.delta == pytest.approx(2.0 - 1e-9)
    assert outside.status == "outside" and outside.delta == pytest.approx(-(2.0 + 1e-6))
    assert not regress.device_passed(table, cpu)
    assert regress.device_passed(table[table["n_features"] == 10], cpu)

    lines = regress.render_device(table, cpu, spec).splitlines()
    assert lines[0].startswith("tiny ci on torch-cpu: FAIL: 1 of 2 device cells within the check tolerance "
                               "(|Δ mean| ≤ 2 reference stds over the folds, at least 1e-06 of the reference mean)")
    assert lines[0].endswith("; worst d1 dev n=20: |Δ| 2 > 2")
    assert lines[1].startswith("  d1 dev n=20: mean ") and "outside the tolerance 2 (reference spread 1 over 3" in lines[1]
    assert len(lines) == 2


def test_the_spread_is_a_standard_error_where_the_published_one_is(tmp_path):
    spec = dataclasses.replace(_spec(tmp_path), columns=Columns(std_is="se"))     # the EERF tables
    mean, spread = regress.reference_spread(spec, pd.Series([1.0, 2.0, 3.0, 4.0]))
    assert mean == 2.5 and spread == pytest.approx(pd.Series([1.0, 2.0, 3.0, 4.0]).std() / 2)
    assert "2 reference standard errors" in regress.device_rule_text(spec)


def test_identical_folds_get_the_relative_floor(tmp_path):
    spec = _spec(tmp_path)
    ref = [_record(n=n, fold=f, error=1.5, device="cpu") for n in (10, 20) for f in range(2)]
    ours = _shifted([1.5, 1.5], 1.5 * 0.9e-6, n=10) + _shifted([1.5, 1.5], 1.5 * 1.1e-6, n=20)
    table, _ = regress.compare_device_tables(spec, _reference(ref), ours, ON_DEVICE, registry=load_registry())
    cells = _cells(table)
    assert cells[("d1", "dev", 10)].tolerance == pytest.approx(1.5 * regress.DEVICE_FLOOR)
    assert cells[("d1", "dev", 10)].reference_spread == 0.0
    assert (cells[("d1", "dev", 10)].status, cells[("d1", "dev", 20)].status) == ("within", "outside")


def test_cpu_only_methods_must_still_match_exactly(tmp_path):
    spec = _spec(tmp_path)
    ref = ([_record(fold=f, error=e, device="cpu") for f, e in enumerate([1.0, 2.0])]
           + [_record(method="numpy-only", fold=f, error=e, device="cpu") for f, e in enumerate([1.0, 2.0])])
    ours = (_shifted([1.0, 2.0], 0.1)                                              # device: well within 2 stds
            + [_record(method="numpy-only", fold=0, error=1.0, device="cpu"),
               _record(method="numpy-only", fold=1, error=2.0 + 1e-8, device="cpu")])   # far inside 2 stds, not exact
    table, cpu = regress.compare_device_tables(spec, _reference(ref), ours, ON_DEVICE, registry=load_registry())
    assert list(table["status"]) == ["within"]
    assert list(cpu["status"]) == ["match", "differ"] and list(cpu["field"]) == ["", "error"]
    assert not regress.device_passed(table, cpu)
    lines = regress.render_device(table, cpu, spec).splitlines()
    assert lines[0].startswith("tiny ci on torch-cpu: FAIL: 1 of 1 device cells within")
    assert lines[0].endswith("; only 1 of 2 CPU tasks (numpy-only) match exactly")
    assert lines[1].startswith("  d1 numpy-only n=10 fold 1: error: reference 2.0 vs ours")

    ours[-1] = _record(method="numpy-only", fold=1, error=2.0, device="cpu")
    table, cpu = regress.compare_device_tables(spec, _reference(ref), ours, ON_DEVICE, registry=load_registry())
    assert regress.device_passed(table, cpu)
    text = regress.render_device(table, cpu, spec)
    assert text.startswith("tiny ci on torch-cpu: 1 of 1 device cells within") and "\n" not in text
    assert text.endswith("; 2 of 2 CPU tasks (numpy-only) match exactly")


def test_a_device_cell_with_a_missing_unfinished_extra_or_cpu_task_fails(tmp_path):
    spec = _spec(tmp_path)
    ref = [_record(dataset=d, fold=f, error=1.0 + f, device="cpu") for d in ("d1", "d2") for f in range(3)]
    ours = [_record(fold=0, error=1.0), _record(fold=1, status="error", message="RuntimeError: boom"),
            _record(fold=3, error=1.0),                                           # d1: fold 2 missing, 3 extra
            _record(dataset="d2", fold=0, error=1.0), _record(dataset="d2", fold=1, error=2.0),
            _record(dataset="d2", fold=2, error=3.0, device="cpu")]               # not computed on the device
    table, _ = regress.compare_device_tables(spec, _reference(ref), ours, ON_DEVICE, registry=load_registry())
    cells = _cells(table)
    assert list(table["status"]) == ["failed", "failed"]
    assert cells[("d1", "dev", 10)].message == ("fold 2 missing (in the reference, not in this run); fold 3 extra "
                                                "(in this run, not in the reference); fold 1 error: RuntimeError: boom")
    assert cells[("d2", "dev", 10)].message == "fold 2 ran on cpu, not torch-cpu"
    assert math.isnan(cells[("d2", "dev", 10)].delta)
    lines = regress.render_device(table, pd.DataFrame(columns=regress.COMPARE_COLUMNS), spec).splitlines()
    assert lines[0].startswith("tiny ci on torch-cpu: FAIL: 0 of 2 device cells") and "worst" not in lines[0]
    assert lines[2] == "  d2 dev n=10: fold 2 ran on cpu, not torch-cpu"


def test_device_methods_are_those_whose_estimator_takes_a_device():
    assert regress.device_methods(load_spec("gfc2016-table1", load_registry()), load_registry()) == {
        (d, "alc") for d in ("delta-ailerons", "kinematics", "cpu-activity")}
    assert regress.device_methods(load_spec("gbrff2020-table2", load_registry()), load_registry()) == set()
    assert regress.device_methods(load_spec("gfc2016-ablation", load_registry()), load_registry()) == set()


def test_usage_errors_and_skipped_specs(tmp_path, capsys):
    assert regress.main(["gfc2016-table1", "--device", "torch-cpu", "--write-reference"]) == 2
    assert "leave out --device" in capsys.readouterr().err
    with pytest.raises(SystemExit):                 # argparse: torch-cpu or cuda
        regress.main(["gfc2016-table1", "--device", "numpy"])
    pytest.importorskip("torch")
    spec = load_spec("gfc2016-table1", load_registry())
    assert regress.main(["gfc2016-table1", "--device", "torch-cpu", "--out", str(spec.results / "x")]) == 2
    assert "results directory" in capsys.readouterr().err
    # no method of the ablation's ci configuration takes a device: one note, nothing runs, exit 0
    assert regress.main(["gfc2016-ablation", "--device", "torch-cpu", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("gfc2016-ablation ci on torch-cpu: skipped, no method of its ci configuration takes "
                             "a device (gfc-all-rows, ")
    assert out[1].startswith("device regression (torch-cpu): 0 spec(s), 1 skipped, 0 failing")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.json"))


def test_without_torch_the_device_regression_is_one_line(monkeypatch, capsys):
    from rfbench.methods import device as devices

    def no_torch():
        raise devices.DeviceUnavailable("the GPU path needs torch: pip install 'rfbench[gpu]'")

    monkeypatch.setattr(devices, "torch_module", no_torch)
    assert regress.main(["gfc2016-table1", "--device", "torch-cpu"]) == 2
    assert capsys.readouterr().err.strip() == ("error: device torch-cpu: the GPU path needs torch: "
                                               "pip install 'rfbench[gpu]'")


def test_end_to_end_on_generated_data(tmp_path):
    """A tiny configuration (generated data, no mirror): the NumPy run writes the reference, the
    torch-cpu run of the same configuration is within the tolerance, its records say torch-cpu, and
    the CPU-only method (LightGBM) matches exactly."""
    pytest.importorskip("torch")
    spec = _spec(tmp_path, ci="ci: {methods: [rff-gauss, lgbm-quick], protocol: {max_samples: 120}, "
                              "reference: reference/tiny.csv}\n")
    regress.write_reference(spec, regress.ci_run(spec, tmp_path / "numpy", registry=load_registry()))
    run = regress.ci_run(spec, tmp_path / "device", device="torch-cpu", registry=load_registry())
    devices = {(r["method"], r["device"]) for r in regress._run_records(spec, run)}
    assert devices == {("rff-gauss", "torch-cpu"), ("lgbm-quick", "cpu")}
    table, cpu = regress.device_compare(spec, run, registry=load_registry())
    assert regress.device_passed(table, cpu), regress.render_device(table, cpu, spec)
    assert len(table) == 1 and len(cpu) == 2 and (cpu["status"] == "match").all()
    assert regress.device_run_and_compare(spec, tmp_path / "again", echo=lambda line: None, registry=load_registry()) == 0


def test_end_to_end_smallest_spec_with_device_methods(mirror_dir, tmp_path, capsys):
    """The smallest spec whose ci configuration has device methods, for real: its torch-cpu run is
    within the table's tolerance of the committed NumPy reference."""
    pytest.importorskip("torch")
    assert regress.main(["eerf2018-figures", "--device", "torch-cpu", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("eerf2018-figures ci on torch-cpu: 3 of 3 device cells within the check tolerance"), out
    records = regress._run_records(load_spec("eerf2018-figures", load_registry()), tmp_path / "eerf2018-figures-torch-cpu")
    assert len(records) == 6 and all(r["device"] == "torch-cpu" for r in records)


def test_reproduce_ci_refuses_a_device_and_names_the_device_regression(capsys):
    from rfbench.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "gfc2016-table1", "--ci", "--device", "cuda"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "leave out --device" in err
    assert "python -m rfbench.experiments.regress --device torch-cpu" in err
