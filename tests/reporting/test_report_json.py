"""The JSON format: ``rfbench report SPEC --format json`` prints the report's model (rows, columns,
values, marks, notes); its numbers are the CSV's and its bold marks the text format's stars."""

import io
import json
import re
from pathlib import Path

import pandas as pd
from tests.cli_errors import one_line_error

from rfbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
RESULTS = str(ROOT / "results" / "gfc2016-table1")


def report(capsys, fmt: str) -> str:
    main(["report", RESULTS, "--format", fmt, "--width", "0"])
    return capsys.readouterr().out


def test_json_is_the_model_with_the_csv_values_and_the_text_bold(capsys):
    model = json.loads(report(capsys, "json"))
    csv = pd.read_csv(io.StringIO(report(capsys, "csv"))).set_index(["dataset", "n_features", "method"])
    columns = [(c["n"], c["method"]) for c in model["columns"]]
    assert columns and model["rows"] and model["caption"] and model["bold_rule"].startswith("bold:")
    assert set(model) >= {"notes", "wilcoxon", "timing", "score", "test", "alpha"}
    # every cell's value is the CSV's (unrounded) and its bold mark the CSV's
    cells = 0
    for row in model["rows"]:
        for (n, method), cell in zip(columns, row["cells"], strict=True):
            if cell is None:
                assert (row["dataset"], n, method) not in csv.index
                continue
            line = csv.loc[(row["dataset"], n, method)]
            assert cell["error_mean"] == line["error_mean"] and cell["walltime_s"] == line["walltime_s"]
            assert cell["marks"]["bold"] == bool(line["bold"]) and cell["folds"] == line["folds"]
            cells += 1
    assert cells == len(csv)
    # the text format's stars are the bold marks: one table (--width 0), a column pair per (n, method)
    text = report(capsys, "text").splitlines()
    bold = {}
    for row in model["rows"]:
        line = next(x for x in text if x.startswith(row["dataset"] + " "))
        fields = re.split(r"\s{2,}", line.strip())[3:]
        for (n, method), error in zip(columns, fields[0::2], strict=True):
            bold[(row["dataset"], n, method)] = error.endswith(" *")
    marked = {(row["dataset"], n, method): cell["marks"]["bold"] for row in model["rows"]
              for (n, method), cell in zip(columns, row["cells"], strict=True) if cell is not None}
    assert any(marked.values()) and all(bold[k] == v for k, v in marked.items())
    assert not any(bold[k] for k in bold if k not in marked)


def test_the_gp_layout_refuses_json_in_one_line(capsys):
    """The gp layout renders its own model (rfbench.reporting.gp_table) and has no JSON of it."""
    one_line_error(capsys, ["report", RESULTS, "--layout", "gp", "--format", "json"],
                   "the gp layout has no json output")
