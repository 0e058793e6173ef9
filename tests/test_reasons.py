"""Every failing published cell carries its reason: computed when ours is better than
published beyond the tolerance, else declared by the spec with the command that shows it and the committed
results file that command reads."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from rfbench.experiments import check, html_page
from rfbench.experiments.spec import load_spec
from rfbench.registry import ROOT
from rfbench.registry import load as load_registry

SPECS = sorted(p.stem for p in (ROOT / "bench").glob("*.yaml"))
PUBLISHED = [name for name in SPECS if load_spec(name, load_registry()).published]


@pytest.mark.parametrize("reproduced, published, tol, higher, better", [
    (3.0, 4.0, 0.5, False, True),         # a lower error beyond the tolerance
    (3.6, 4.0, 0.5, False, False),        # within it: passes, not better
    (5.0, 4.0, 0.5, False, False),        # a higher error: a fail on the worse side
    (0.95, 0.90, 0.02, True, True),       # accuracy: higher is better
    (0.85, 0.90, 0.02, True, False),
])
def test_better_than_published_is_computed_from_the_numbers(reproduced, published, tol, higher, better):
    assert check.better_than_published(reproduced, published, tol, higher) is better


def _records(ds, method, errors, n=100):
    return [{"dataset": ds, "method": method, "n_features": n, "fold": f, "seed": 0, "protocol": "fixed-r10-i5",
             "status": "done", "error": e, "total_s": 1.0, "fit_s": 1.0, "predict_s": 0.05, "tune_s": 0.0,
             "preprocess_s": 0.1, "params": json.dumps({})} for f, e in enumerate(errors)]


def _synthetic_table3():
    """EERF Table 3 on Adult: RKS far better than published (17.37, SE 0.06), EERF far worse (16.16)."""
    spec = load_spec("eerf2018-table3", load_registry())
    rows = _records("eerf-adult", "rks-paper", [17.0 + 0.01 * i for i in range(10)]) \
        + _records("eerf-adult", "eerf-paper", [17.9 + 0.01 * i for i in range(10)])
    return spec, pd.DataFrame(rows)


def test_a_synthetic_better_cell_gets_the_computed_reason_and_a_worse_one_the_spec_s():
    spec, results = _synthetic_table3()
    table = check.compare(spec, results, load_registry())
    cell = table[(table["dataset"] == "eerf-adult") & ~table["variant"]].set_index("method")
    rks, eerf = cell.loc["rks-paper"], cell.loc["eerf-paper"]
    assert rks["status"] == "fail" and rks["better"] and rks["reason_kind"] == "computed"
    assert rks["reason"].startswith("ours is better than published: 17.05 against 17.37")
    assert rks["reason_command"] == ("python -m rfbench.cli check bench/eerf2018-table3.yaml "
                                     "--datasets eerf-adult --methods rks-paper")
    assert rks["reason_results"] == "results/eerf2018-table3/results.csv"
    assert eerf["status"] == "fail" and not eerf["better"] and eerf["reason_kind"] == "declared"
    declared = spec.reasons["eerf-adult"]["EERF"]
    assert (eerf["reason"], eerf["reason_command"], eerf["reason_results"]) == \
        (declared.text, declared.command, declared.results)
    assert check.failing_without_reason(table).empty
    text = check.render(table, spec)
    assert "reasons: 2 of 2 failing cells (1 computed: better than published; 1 declared by the spec" in text
    assert "      shown by: python -m rfbench.cli check bench/eerf2018-table3.yaml --datasets eerf-adult\n" in text


def test_a_failing_cell_without_a_reason_is_named_under_the_table():
    spec, results = _synthetic_table3()
    bare = dataclasses.replace(spec, reasons={})       # the spec's reasons taken away
    table = check.compare(bare, results, load_registry())
    assert list(check.failing_without_reason(table)["method"]) == ["eerf-paper"]
    text = check.render(table, bare)
    assert "no reason yet: eerf-adult eerf-paper (n = 100)" in text
    assert "reasons: 1 of 2 failing cells" in text


def test_the_site_s_check_table_shows_the_reason_with_its_command_and_results():
    spec, results = _synthetic_table3()
    html = html_page.check_section(spec, results, full_text=False)
    assert "<th>reason</th>" in html or '<th class="l">reason</th>' in html
    assert "ours is better than published: 17.05 against 17.37" in html
    assert "results: results/eerf2018-table3/results.csv" in html


@pytest.mark.parametrize("name", SPECS)
def test_every_declared_reason_names_a_command_and_a_committed_results_file(name):
    spec = load_spec(name, load_registry())
    for dataset, per_method in spec.reasons.items():
        for method, reason in per_method.items():
            assert reason.text and reason.command.startswith("python "), (dataset, method)
            assert (ROOT / reason.results).is_file(), f"{name}: {dataset} {method}: {reason.results} is not committed"


@pytest.mark.parametrize("name", PUBLISHED)
def test_every_failing_cell_of_the_committed_results_has_a_reason(name):
    """A new failing cell without a reason (computed or in the spec) fails here."""
    from rfbench.experiments.reproduce import results_of

    spec = load_spec(name, load_registry())
    table = check.compare(spec, results_of(spec), load_registry())
    fail = check.paper_cells(table)
    fail = fail[fail["status"] == "fail"]
    missing = check.failing_without_reason(table)
    assert missing.empty, f"{name}: no reason for " + ", ".join(f"{r.dataset} {r.method} (n = {r.n})"
                                                               for r in missing.itertuples())
    for r in fail.itertuples():
        assert isinstance(r.reason, str) and r.reason and r.reason_command.startswith("python ")
        assert (ROOT / r.reason_results).is_file(), f"{name}: {r.reason_results} is not committed"
