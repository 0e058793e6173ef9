"""Runs combine correctly: several directories are pooled by task key, conflicting
copies and mixed protocols are refused, and repeated seeds share one directory and are pooled in
the report with the spread across seeds shown apart from the spread across folds."""

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rfbench.cli import main
from rfbench.experiments import check
from rfbench.experiments.spec import load_spec
from rfbench.registry import load as load_registry
from rfbench.reporting import report
from rfbench.store import CombineError, RunDir, load_results, record_key
from tests.records import as_record

PROTOCOL = "cv-o3-i2"
DATASETS = ("kinematics", "bank", "pumadyn")


def write_run(path, protocol=PROTOCOL, seeds=(0,), shift=0.0, methods=(("a", 0.0), ("b", 1.0))):
    """Three datasets × two methods × three folds per seed; a is clearly better than b."""
    rng = np.random.default_rng(0)
    run = RunDir(path).ensure()
    for seed in seeds:
        for d, ds in enumerate(DATASETS):
            for method, offset in methods:
                for fold in range(3):
                    run.write_record(as_record({"dataset": ds, "method": method, "n_features": 10, "fold": fold, "seed": seed,
                                      "protocol": protocol, "status": "done", "metric": "rmse100",
                                      "error": 5 + d + offset + shift + 0.3 * seed + 0.05 * rng.normal(),
                                      "total_s": 1.0, "n_train": 90, "n_test": 10, "task": "regression",
                                      "finished_at": "2024-01-01T00:00:00+00:00"}))
    run.write_results_csv()
    return run.path


def cli(capsys, *args) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


# -- 1. the same records in two directories count once ----------------------------------------------


def test_duplicated_directories_count_once(tmp_path):
    a = write_run(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    one, both = load_results([a]), load_results([a, b])
    assert len(both) == len(one) == 3 * 2 * 3
    cells1, _, _ = report.summarise(one)
    cells2, _, _ = report.summarise(both)
    for key, c in cells1.items():
        assert cells2[key].folds == c.folds == 3
        assert cells2[key].std == pytest.approx(c.std) and cells2[key].mean == pytest.approx(c.mean)
        assert cells2[key].bold == c.bold and cells2[key].seeds == 1 and cells2[key].seed_std is None
    assert any(c.bold for c in cells1.values())
    for fmt in ("text", "markdown", "csv"):
        assert report.render(both, fmt, width=0, registry=load_registry()) == report.render(one, fmt, width=0, registry=load_registry())
    assert report.render(both, "text", test="paired", width=0, registry=load_registry()) == report.render(one, "text", test="paired", width=0, registry=load_registry())
    text = report.render(one, "text", width=0, registry=load_registry())
    c = cells1[("kinematics", 10, "a")]
    assert f"{c.mean:.2f} (±{c.std:.2f}) *" in text and "seeds" not in text    # one seed: cells read as before


def test_directories_with_other_outer_folds_are_refused(tmp_path, capsys):
    """A copy whose folds/kinematics.csv was shuffled holds the same task keys but other test sets:
    pooling or pairing its folds with the original's would be wrong, so the merge is refused."""
    a, b, c = write_run(tmp_path / "a"), tmp_path / "b", tmp_path / "c"
    folds = np.arange(30) % 3
    for ds in DATASETS:
        RunDir(a).write_folds(ds, folds)
    shutil.copytree(a, b)
    shutil.copytree(a, c)
    assert len(load_results([a, b])) == 3 * 2 * 3                  # identical folds: pooled as before
    (c / "folds" / "kinematics.csv").write_text(
        "row,fold\n" + "".join(f"{i},{f}\n" for i, f in enumerate(np.random.default_rng(1).permutation(folds))))
    with pytest.raises(CombineError, match=r"kinematics \(seed 0, protocol cv-o3-i2\) has other outer folds"):
        load_results([a, c])
    assert len(load_results([c])) == 3 * 2 * 3                    # alone, a directory is what it is
    code, out, err = cli(capsys, "report", str(a), str(c), "--test", "paired")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "folds/kinematics.csv differ" in err
    assert out == ""


def edit_record(run: Path, rec: dict, change) -> None:
    """Rewrite one stored record of ``run`` as ``change(stored record)`` returns it."""
    path = run / "records" / f"{record_key(**rec)}.json"
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def test_a_failed_copy_yields_to_a_finished_one_and_last_bits_do_not_conflict(tmp_path):
    a = write_run(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    rec = {"dataset": "kinematics", "method": "a", "n_features": 10, "fold": 0, "seed": 0, "protocol": PROTOCOL}
    edit_record(b, rec, lambda r: dict(r, status="error", error=None, message="boom"))
    edit_record(b, dict(rec, fold=1), lambda r: dict(r, error=r["error"] * (1 + 1e-13)))  # other thread count
    df = load_results([b, a])
    assert len(df) == 18 and (df["status"] == "done").all()


def test_conflicting_duplicates_are_refused(tmp_path, capsys):
    a = write_run(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    rec = {"dataset": "bank", "method": "b", "n_features": 10, "fold": 2, "seed": 0, "protocol": PROTOCOL}
    edit_record(b, rec, lambda r: dict(r, error=r["error"] + 0.5))   # another code version
    with pytest.raises(CombineError, match="bank b n=10 fold 2 seed 0") as exc:
        load_results([a, b])
    assert str(a) in str(exc.value) and str(b) in str(exc.value) and record_key(**rec) in str(exc.value)
    for cmd in ("report", "plot"):
        code, out, err = cli(capsys, cmd, str(a), str(b))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert "different results" in err and str(a) in err and str(b) in err


# -- 2. one cell under two protocols is never pooled --------------------------------------------------


def test_different_protocols_are_refused_and_one_can_be_selected(tmp_path, capsys):
    a = write_run(tmp_path / "a")
    c = write_run(tmp_path / "c", protocol=PROTOCOL + "-max300", shift=2.0)
    with pytest.raises(CombineError, match="2 protocols") as exc:
        load_results([a, c])
    msg = str(exc.value)
    assert PROTOCOL in msg and PROTOCOL + "-max300" in msg and "--protocol" in msg
    code, out, err = cli(capsys, "report", str(a), str(c))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--protocol KEY" in err
    code, out, err = cli(capsys, "report", str(a), str(c), "--protocol", PROTOCOL, "--width", "0")
    assert code == 0
    assert out == report.render(load_results([a]), "text", width=0, registry=load_registry())
    code, out, err = cli(capsys, "report", str(a), "--protocol", "holdout-t0.3-i5")
    assert code == 2 and "no records of protocol holdout-t0.3-i5" in err and PROTOCOL in err
    # one directory holding both protocols is refused the same way
    for p in (c / "records").glob("*.json"):
        shutil.copy(p, a / "records" / p.name)
    with pytest.raises(CombineError, match="select one with --protocol KEY"):
        load_results([a])
    assert len(load_results([a], PROTOCOL)) == 18


# -- 3. seeds: pooled, spreads apart, tests over (seed, fold) ------------------------------------------


def test_seeds_are_pooled_with_both_spreads():
    rows = []
    rng = np.random.default_rng(4)
    for seed in (0, 1, 2):
        for method, offset in (("a", 0.0), ("b", 0.1)):
            for fold in range(3):
                rows.append({"dataset": "kinematics", "method": method, "n_features": 10, "fold": fold, "seed": seed,
                             "protocol": PROTOCOL, "status": "done", "metric": "rmse100", "total_s": 1.0,
                             "n_train": 90, "n_test": 10, "task": "regression",
                             "error": 5 + seed + fold + offset + 0.001 * rng.normal()})
    df = pd.DataFrame(rows)
    cells, errors, _ = report.summarise(df, test="paired")
    a = cells[("kinematics", 10, "a")]
    e = df[df["method"] == "a"]
    assert a.mean == pytest.approx(e["error"].mean()) and a.folds == 9 and a.expected == 9 and a.seeds == 3
    assert a.std == pytest.approx(e.groupby("seed")["error"].std(ddof=1).mean())          # ≈ 1 (folds)
    assert a.seed_std == pytest.approx(e.groupby("seed")["error"].mean().std(ddof=1))     # ≈ 1 (seeds)
    assert list(errors[("kinematics", 10, "a")].index.names) == ["seed", "fold"]
    assert a.bold and not cells[("kinematics", 10, "b")].bold       # paired by (seed, fold): 0.1 on every pair
    welch, _, _ = report.summarise(df)
    assert not welch[("kinematics", 10, "a")].bold                   # hidden under the fold and seed spread
    text = report.render(df, "text", width=0, test="paired", registry=load_registry())
    assert f"{a.mean:.2f} (±{a.std:.2f} folds, ±{a.seed_std:.2f} seeds) *" in text
    assert "paired by seed and outer fold number" in text and "all 3 seeds" in text
    # seed 2 of b unfinished: the cell is partial, 6 of 9 (seed, fold) tasks
    cells, _, _ = report.summarise(df[~((df["method"] == "b") & (df["seed"] == 2))])
    assert cells[("kinematics", 10, "b")].partial and cells[("kinematics", 10, "b")].expected == 9


def test_check_pools_seeds_against_the_published_std_over_folds(tmp_path):
    """Table 4 cells: seed 0 has exactly the published mean and std over ten folds, seed 1 the
    same shifted by one published std: pooled mean half a std off, ± the published std, seeds apart."""
    pub = pd.read_csv(check.published_dir() / "gfc2016_table4_rff.csv")
    names = {"Gauss": "rff-gauss", "Laplace": "rff-laplace", "Cauchy": "rff-cauchy"}
    run = RunDir(tmp_path / "run").ensure()
    z = np.array([-1, 1] * 5, dtype=float) / np.std(np.array([-1, 1] * 5), ddof=1)
    rows = pub[pub["dataset"] == "kinematics"]
    for seed in (0, 1):
        for _, row in rows.iterrows():
            for fold, e in enumerate(row["error_mean"] + row["error_std"] * (z + seed)):
                run.write_record(as_record({"dataset": "kinematics", "method": names[row["kernel"]],
                                  "n_features": int(row["n_features"]), "fold": fold, "seed": seed,
                                  "protocol": "cv-o10-i5", "status": "done", "error": float(e), "total_s": 1.0}))
    spec = load_spec("gfc2016-table4", load_registry())
    table = check.compare(spec, load_results([run.path], spec.protocol_key), load_registry())
    present = table[table["status"] != "missing"]
    assert len(present) == len(rows) and (present["status"] == "pass").all()
    assert np.allclose(present["diff_stds"], 0.5) and (present["folds"] == 20).all() and (present["seeds"] == 2).all()
    r = present.iloc[0]
    std = float(r["published"].split("± ")[1])
    assert r["reproduced"].endswith(f"± {std:.2f} (±{std / np.sqrt(2):.2f} seeds)")
    assert "seeds" in check.render(table, spec)


# -- 4. end to end: rfbench run --seeds 0,1 in one directory ------------------------------------------


def test_run_seeds_in_one_directory(tmp_path, capsys):
    out = tmp_path / "seeds"
    args = ["--datasets", "friedman-generated", "--methods", "rff-gauss,rff-laplace", "--outer-folds", "3",
            "--inner-folds", "2", "--max-samples", "300", "--features", "10", "--quiet", "--out", str(out)]
    res = subprocess.run([sys.executable, "-m", "rfbench.cli", "run", *args, "--seeds", "0,1"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    df = load_results([out])
    assert len(df) == 2 * 2 * 3 and set(df["status"]) == {"done"}
    assert df.groupby(["method", "seed"]).size().to_dict() == {(m, s): 3 for m in ("rff-gauss", "rff-laplace")
                                                               for s in (0, 1)}
    # fold assignments per seed: the seed-0 file where it always was, seed 1 beside it, different splits
    f0 = pd.read_csv(out / "folds" / "friedman-generated.csv")
    f1 = pd.read_csv(out / "folds" / "s1" / "friedman-generated.csv")
    assert len(f0) == len(f1) == 300 and not (f0["fold"] == f1["fold"]).all()
    tests = {s: df[(df["seed"] == s) & (df["method"] == "rff-gauss")].set_index("fold")["error"] for s in (0, 1)}
    assert not np.allclose(tests[0], tests[1])
    cells, _, _ = report.summarise(df)
    assert {(c.folds, c.seeds, c.partial) for c in cells.values()} == {(6, 2, False)}
    assert all(c.seed_std is not None and c.seed_std > 0 for c in cells.values())
    assert "folds, ±" in res.stdout and "seeds)" in res.stdout          # the table at the end of the run
    for fmt in ("text", "markdown", "latex", "html"):
        code, text, err = cli(capsys, "report", str(out), "--format", fmt, "--width", "0")
        assert code == 0, err
        for c in cells.values():
            assert f"{c.std:.2f} folds, " in text and f"{c.seed_std:.2f} seeds" in text, fmt
        assert "of all 2 seeds" in text, fmt
    code, text, _ = cli(capsys, "report", str(out), "--format", "csv")
    csv = pd.read_csv(io.StringIO(text))
    assert set(csv["seeds"]) == {2} and set(csv["folds"]) == {6} and csv["error_std_seeds"].gt(0).all()
    # the single-seed form resumes the same directory: seed 1 is done, nothing runs, its folds agree
    res = subprocess.run([sys.executable, "-m", "rfbench.cli", "run", *args, "--seed", "1", "--no-report"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert len(load_results([out])) == 12
    code, _, err = cli(capsys, "run", *args, "--seed", "1", "--seeds", "0,1")
    assert code == 2 and "either --seed N or --seeds LIST" in err
