"""Exact CI regression (rfbench.experiments.regress): the comparison of a run with a reference, its verdict,
usage errors, and a tiny end-to-end run that writes a reference and matches it (determinism)."""

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from rfbench.errors import UsageError
from rfbench.experiments import regress
from rfbench.experiments.spec import all_specs, load_spec
from rfbench.registry import load as load_registry
from tests.records import as_record


def _record(dataset="d1", method="m", n=10, fold=0, error=1.5, params=None, status="done", message=""):
    return {"dataset": dataset, "method": method, "n_features": n, "fold": fold, "status": status,
            "error": error if status == "done" else None, "message": message,
            "params": json.dumps(params if params is not None else {"lambda": 0.01, "kernel": "gaussian"})}


def _reference(records) -> pd.DataFrame:
    """A reference as read from its CSV: strings only."""
    return pd.DataFrame([{"dataset": r["dataset"], "method": r["method"], "n_features": str(r["n_features"]),
                          "fold": str(r["fold"]), "error": repr(float(r["error"])),
                          "params": regress.canonical_params(r["params"])} for r in records])


def _by_task(table):
    return {(r.dataset, r.method, int(r.n_features), int(r.fold)): r for r in table.itertuples(index=False)}


def test_comparison_names_every_kind_of_difference():
    ref = [_record(fold=0, error=1.25), _record(fold=1, error=2.5), _record(fold=2, error=3.0),
           _record(fold=3, error=4.0, params={"lambda": 0.01, "kernel": "gaussian", "order": 3}),
           _record(dataset="d2", fold=0, error=7.0), _record(dataset="d2", fold=1, error=8.0)]
    ours = [_record(fold=0, error=1.25 + 1e-12),                                   # within atol: match
            _record(fold=1, error=2.5 + 1e-6),                                     # error moved
            _record(fold=2, error=3.0, params={"lambda": 0.02, "kernel": "gaussian"}),  # numeric param
            _record(fold=3, error=4.0, params={"lambda": 0.01, "kernel": "laplace", "order": 3}),  # other param
            _record(dataset="d2", fold=0, status="error", message="ValueError: boom"),
            _record(dataset="d3", fold=0, error=1.0)]                             # extra; d2 fold 1 missing
    table = regress.compare_tables(_reference(ref), ours, atol=1e-9)
    assert list(table.columns) == regress.COMPARE_COLUMNS
    rows = _by_task(table)
    assert len(rows) == 7
    assert rows[("d1", "m", 10, 0)].status == "match"
    r = rows[("d1", "m", 10, 1)]
    assert (r.status, r.field, r.reference, r.ours) == ("differ", "error", "2.5", repr(2.5 + 1e-6))
    r = rows[("d1", "m", 10, 2)]
    assert (r.status, r.field, r.reference, r.ours) == ("differ", "params.lambda", "0.01", "0.02")
    r = rows[("d1", "m", 10, 3)]
    assert (r.status, r.field, r.reference, r.ours) == ("differ", "params.kernel", '"gaussian"', '"laplace"')
    r = rows[("d2", "m", 10, 0)]
    assert (r.status, r.field) == ("differ", "status") and "boom" in r.ours
    assert rows[("d2", "m", 10, 1)].status == "missing"
    assert rows[("d3", "m", 10, 0)].status == "extra"


def test_params_compare_numbers_within_atol_and_everything_else_exactly():
    diffs = regress._param_diffs
    assert diffs({"a": 1.0, "b": [1, 2.0], "c": None}, {"a": 1.0 + 1e-12, "b": [1, 2.0], "c": None}, 1e-9) == []
    assert diffs({"a": 1}, {"a": 1.0}, 1e-9) == []                         # int vs float: numbers
    assert [d[0] for d in diffs({"a": 1, "b": 2}, {"a": 1, "c": 2}, 1e-9)] == ["params.b", "params.c"]
    assert [d[0] for d in diffs({"b": [1, 2]}, {"b": [1, 3]}, 1e-9)] == ["params.b[1]"]
    assert [d[0] for d in diffs({"b": [1, 2]}, {"b": [1]}, 1e-9)] == ["params.b"]
    assert [d[0] for d in diffs({"v": True}, {"v": 1}, 1e-9)] == ["params.v"]   # bool is not a number
    assert [d[0] for d in diffs({"x": None}, {"x": 0.0}, 1e-9)] == ["params.x"]
    assert diffs({"x": float("nan")}, {"x": float("nan")}, 1e-9) == []
    # the order of keys in the record's JSON does not matter
    assert regress.canonical_params('{"b": 1, "a": 2}') == '{"a": 2, "b": 1}'
    assert regress.canonical_params(None) == "{}"


def _spec(tmp_path, ci="ci: {reference: reference/tiny.csv}\n", name="tiny"):
    path = tmp_path / f"{name}.yaml"
    path.write_text("title: tiny regression\nresults: results\n"
                    "run: {datasets: [friedman-generated], methods: [rff-gauss, rff-cauchy], features: [8]}\n"
                    "protocol: {name: cv, outer_folds: 2, inner_folds: 2, seed: 0}\n" + ci)
    return load_spec(str(path), load_registry())


def test_render_verdicts(tmp_path):
    spec = _spec(tmp_path)
    ref = [_record(fold=0), _record(fold=1)]
    ok = regress.compare_tables(_reference(ref), ref)
    assert regress.render(ok, spec) == "tiny ci: 2 of 2 tasks match the reference"
    bad = regress.compare_tables(_reference(ref), [_record(fold=0, error=1.5 + 1e-6)])
    lines = regress.render(bad, spec).splitlines()
    assert lines[0] == "tiny ci: FAIL: 0 of 2 tasks match the reference; 1 differs, 1 missing"
    assert lines[1] == f"  d1 m n=10 fold 0: error: reference 1.5 vs ours {1.5 + 1e-6!r} (Δ +1e-06)"
    assert lines[2] == "  d1 m n=10 fold 1: missing (in the reference, not in this run)"
    assert "--write-reference" in lines[3]


def test_usage_errors_say_what_to_do(tmp_path):
    no_ci = _spec(tmp_path, ci="", name="noci")
    with pytest.raises(UsageError, match="no ci block.*--write-reference"):
        regress.ci_compare(no_ci, tmp_path)
    with pytest.raises(UsageError, match="no ci block"):
        regress.ci_run(no_ci, tmp_path / "out", registry=load_registry())
    spec = _spec(tmp_path)
    (tmp_path / "run").mkdir()
    with pytest.raises(UsageError, match=r"reference .*tiny\.csv not found.*reproduce tiny --ci --write-reference"):
        regress.ci_compare(spec, tmp_path / "run")
    assert regress.main([str(tmp_path / "noci.yaml")]) == 2
    assert regress.main([str(tmp_path / "tiny.yaml")]) == 2            # no reference yet
    assert regress.main([]) == 2


def test_every_spec_has_a_ci_block():
    for spec in all_specs(load_registry()):
        assert spec.ci is not None, spec.name
        assert spec.ci.reference.parent.name == "reference" and spec.ci.reference.name == f"{spec.name}.csv"
        assert regress.read_reference(spec).shape[0] > 0, spec.name


def test_end_to_end_reference_then_exact_match(tmp_path):
    """Two runs of a tiny configuration: the first writes the reference, the second matches it bit
    for bit; a perturbed reference fails with the cell named."""
    spec = _spec(tmp_path, ci="ci: {protocol: {max_samples: 120}, reference: reference/tiny.csv}\n")
    first = regress.ci_run(spec, tmp_path / "first", registry=load_registry())
    path = regress.write_reference(spec, first)
    assert path == tmp_path / "reference" / "tiny.csv"
    ref = pd.read_csv(path, dtype=str)
    assert list(ref.columns) == regress.REFERENCE_COLUMNS and len(ref) == 2 * 2   # 2 methods × 2 folds
    assert all(json.loads(p) and p == json.dumps(json.loads(p), sort_keys=True) for p in ref["params"])
    with pytest.raises(UsageError, match="already holds records"):
        regress.ci_run(spec, first, registry=load_registry())

    second = regress.ci_run(spec, tmp_path / "second", registry=load_registry())
    table = regress.ci_compare(spec, second)
    assert (table["status"] == "match").all() and len(table) == 4
    assert regress.render(table, spec) == "tiny ci: 4 of 4 tasks match the reference"

    # the CLI's `rfbench reproduce SPEC --ci` runs the same
    from click.testing import CliRunner

    from rfbench.cli import cli

    res = CliRunner().invoke(cli, ["reproduce", str(spec.path), "--ci", "--out", str(tmp_path / "cli")])
    assert res.exit_code == 0, res.output
    assert "tiny ci: 4 of 4 tasks match the reference" in res.output

    rows = list(csv.reader(path.open()))
    rows[1][4] = repr(float(rows[1][4]) + 1e-6)
    with path.open("w") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    text = regress.render(regress.ci_compare(spec, second), spec)
    assert text.startswith("tiny ci: FAIL: 3 of 4 tasks match the reference; 1 differs")
    assert f"friedman-generated {rows[1][1]} n=8 fold {rows[1][3]}: error: reference" in text
    assert regress.main([str(spec.path), "--out", str(tmp_path / "third")]) == 1


def test_write_reference_refuses_unfinished_tasks(tmp_path):
    from rfbench.store import RunDir

    spec = _spec(tmp_path, ci="ci: {protocol: {max_samples: 120}, reference: reference/tiny.csv}\n")
    run = RunDir(tmp_path / "run").ensure()
    rec = dict(_record(dataset="friedman-generated", method="rff-gauss", n=8, status="timeout",
                       message="exceeded"), seed=0, protocol=spec.ci.plan.protocol.key())
    run.write_record(as_record(rec))
    with pytest.raises(UsageError, match="1 task.* did not finish"):
        regress.write_reference(spec, tmp_path / "run")
    assert not Path(spec.ci.reference).exists()
