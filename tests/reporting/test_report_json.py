"""The JSON format: ``rfbench report SPEC --format json`` prints the report's model (rows, columns,
values, marks, notes); its numbers are the CSV's and its bold marks the text format's stars."""

import io
import json
import re
from pathlib import Path

import pandas as pd

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


def test_the_gp_layout_s_json_has_the_csv_values_and_bold_marks(capsys):
    """The gp layout's model (rfbench.reporting.gp_table) as JSON: per n a table whose cells are the gp
    CSV's means, std and ranks (unrounded), with its bold marks, and the marks the text format's stars."""
    def gp(fmt):
        main(["report", RESULTS, "--layout", "gp", "--format", fmt, "--width", "0"])
        return capsys.readouterr().out

    model = json.loads(gp("json"))
    csv = pd.read_csv(io.StringIO(gp("csv"))).set_index(["dataset", "n_features", "method"])
    assert model["layout"] == "gp" and model["tables"] and model["rank_rule"].startswith("average rank")
    cells = {}
    for table in model["tables"]:
        methods = [c["method"] for c in table["columns"]]
        for row in table["rows"]:
            for method, cell in zip(methods, row["cells"], strict=True):
                if cell is not None:
                    cells[(row["dataset"], table["n"], method)] = cell
    assert len(cells) == len(csv) and any(c["marks"]["bold"] for c in cells.values())
    for key, cell in cells.items():
        line = csv.loc[key]
        assert cell["mean"] == line["mean"] and cell["marks"]["bold"] == bool(line["bold"])
        assert cell["splits"] == line["splits"] and (cell["std"] is None) == pd.isna(line["std"])
    # the stars of the text format (--width 0: one table per n, a row per dataset) are the same marks
    text = gp("text").splitlines()
    for table in model["tables"]:
        start = text.index(f"n = {table['n']}")
        block = text[start:next((i for i in range(start + 1, len(text)) if text[i].startswith("n = ")), len(text))]
        for row in table["rows"]:
            line = next(x for x in block if x.startswith(f"  {row['paper']} ("))
            stars = [field.endswith(" *") for field in re.split(r"\s{2,}", line.strip())[1:]]
            assert stars == [c is not None and c["marks"]["bold"] for c in row["cells"]]
