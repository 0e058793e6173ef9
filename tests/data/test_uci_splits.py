"""Suite uci: the 31 UCI regression sets with their published fixed splits, and the ``published``
protocol that runs on them (split j tests exactly the rows of mask column j; the error is the test
RMSE on the target as stored). Bad masks are one line, exit 2, nothing written."""

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rfbench import protocol as proto
from rfbench import registry
from rfbench.data.loader import load, load_split_masks, resolve_dataset_names
from rfbench.data.sources import DataSources
from rfbench.errors import DataUnavailable, UsageError
from rfbench.execution import runner, tasks
from rfbench.protocol import Protocol, SplitAssignment
from rfbench.registry import load as load_registry
from tests.cli_errors import one_line_error

SMALL = ["challenger", "fertility", "concreteslump", "autos", "servo", "breastcancer", "machine", "yacht", "autompg",
         "housing", "forest", "stock", "pendulum", "energy", "concrete", "solar", "airfoil", "wine"]
INTERMEDIATE = ["gas", "skillcraft", "sml", "parkinsons", "pumadyn32nm", "pol", "elevators", "bike", "kin40k", "protein",
                "tamielectric", "keggdirected", "keggundirected"]
LARGE = ["3droad", "song", "buzz", "houseelectric", "ctslice"]
#: Yang et al.'s names where they differ from the repository's
YANG = {"concreteslump": "slump", "autos": "automobile", "breastcancer": "cancer", "machine": "hardware",
        "pumadyn32nm": "pumadyn", "pol": "poletele", "keggdirected": "kegg", "keggundirected": "keggu"}


# -- the registry ----------------------------------------------------------------------------------

def test_the_suites_hold_the_sets_in_size_order():
    reg = registry.load()
    assert [d.name for d in reg.suite("uci-small")] == [f"uci-{n}" for n in SMALL]
    assert [d.name for d in reg.suite("uci-intermediate")] == [f"uci-{n}" for n in INTERMEDIATE]
    assert [d.name for d in reg.suite("uci")] == [f"uci-{n}" for n in SMALL + INTERMEDIATE]
    assert [d.name for d in reg.suite("uci-large")] == [f"uci-{n}" for n in LARGE]
    rows = [d.m for d in reg.suite("uci")]
    assert rows[0] == 23 and rows[-1] == 63608 and len(rows) == 31
    # GFC Table 1's UCI rows are a suite of their own
    assert [d.name for d in reg.suite("gfc-uci")] == ["parkinsons-tm", "ujindoorloc", "ct-slice", "year-msd"]


def test_every_set_names_its_files_checksums_and_source():
    for ds in registry.load().suite("uci"):
        folder = ds.name.removeprefix("uci-")
        assert ds.mirror.file == f"uci-splits/{folder}/data.csv.gz" and len(ds.mirror.sha256) == 64
        assert ds.splits.file == f"uci-splits/{folder}/test_mask.csv.gz" and len(ds.splits.sha256) == 64
        assert ds.target == f"c{ds.d}" and ds.task == "regression"
        assert ds.url.endswith(f"uci_datasets/tree/f0737523712fe66a1640e4b980b927e8490b58eb/{folder}")
        assert "treforevans/uci_datasets" in ds.notes
        assert ds.paper == YANG.get(folder, folder)
        assert ds.aliases == ((f"uci-{YANG[folder]}",) if folder in YANG else ())


def test_the_sets_outside_the_mirror_say_where_they_come_from(capsys, monkeypatch, tmp_path):
    from rfbench.cli import main

    reg = registry.load()
    for ds in reg.suite("uci-large"):
        assert ds.mirror is None and ds.url and "not in the offline mirror" in ds.notes
        with pytest.raises(DataUnavailable, match="to run offline: download https://github.com/treforevans"):
            load(ds, tmp_path, registry=load_registry())
    monkeypatch.setenv("RFBENCH_DATA_DIR", str(tmp_path))
    try:
        main(["datasets", "list"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("uci-3droad "))
    assert "absent (not in the mirror; by hand from https://github.com/treforevans" in line


def test_an_alias_names_the_registered_dataset():
    reg = registry.load()
    assert reg.dataset("uci-slump").name == "uci-concreteslump"
    _, names = resolve_dataset_names(reg, ["uci-kegg", "uci-keggdirected", "uci-housing"])
    assert names == ["uci-keggdirected", "uci-housing"]        # the alias and the name: one dataset


def test_an_alias_that_is_taken_is_refused(tmp_path):
    text = Path(registry.datasets_file()).read_text()
    bad = tmp_path / "datasets.yaml"
    bad.write_text(text.replace("aliases: [uci-slump]", "aliases: [uci-housing]"))
    with pytest.raises(UsageError, match="alias 'uci-housing' is already a dataset's name or alias"):
        registry.read_datasets_file(bad)


# -- the masks -------------------------------------------------------------------------------------

def masks_of(split_of_row, n_splits=10):
    return (np.asarray(split_of_row)[:, None] == np.arange(n_splits)).astype(int)


def test_masks_give_the_split_of_every_row():
    split = np.array([3, 0, 1, 2, 0, 1, 2, 3])
    got = SplitAssignment.from_masks(masks_of(split, 4).astype(str), "m.csv", "ab")
    assert got.split_of_row.tolist() == split.tolist() and got.n_splits == 4 and got.sha256 == "sha256:ab"


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.__setitem__((2, slice(None)), 0), "row 3 is in no split (1 such row)"),
    (lambda m: m.__setitem__((4, slice(0, 3)), 1), "row 5 is a test row of 3 splits"),
    (lambda m: m.__setitem__((6, 1), 2), "row 7, column 2 is '2'; every value must be 0 or 1"),
])
def test_a_bad_mask_is_one_line_naming_the_row(edit, message):
    masks = masks_of(np.arange(20) % 4, 4)
    edit(masks)
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SplitAssignment.from_masks(masks.astype(str), "m.csv", "")


def published_splits(split, repeats=None, **kw):
    p = Protocol("published", **({} if repeats is None else {"repeats": repeats}), **kw)
    own = SplitAssignment.from_masks(masks_of(split, 10), "m.csv", "")
    return p, p.outer_splits(np.zeros(len(split)), "regression", own)


def test_split_j_tests_exactly_mask_column_j():
    rng = np.random.default_rng(0)
    split = rng.permutation(np.arange(97) % 10)
    p, splits = published_splits(split)
    assert p.key() == "published-r10-i5" and p.n_outer == 10 and Protocol.from_key(p.key()) == p
    masks = masks_of(split)
    for j, (train, test) in enumerate(splits):
        assert test.tolist() == np.flatnonzero(masks[:, j]).tolist()
        assert train.tolist() == np.flatnonzero(masks[:, j] == 0).tolist()
    # the seed draws the inner folds and the estimators, never the published splits
    _, other_seed = published_splits(split, seed=5)
    assert all((a[1] == b[1]).all() for a, b in zip(splits, other_seed, strict=True))


def test_fewer_splits_run_the_first_ones_and_too_many_are_refused():
    split = np.arange(50) % 10
    _, three = published_splits(split, repeats=3)
    assert [t.tolist() for _, t in three] == [np.flatnonzero(split == j).tolist() for j in range(3)]
    with pytest.raises(UsageError, match=r"split index 10 is out of range: m.csv holds 10 splits \(0-9\)"):
        published_splits(split, repeats=11)


def test_masks_of_another_row_count_are_refused_and_max_samples_subsamples_them():
    p = Protocol("published")
    own = SplitAssignment.from_masks(masks_of(np.arange(60) % 10), "m.csv", "")
    with pytest.raises(UsageError, match="have 60 rows and the data 59"):
        p.outer_splits(np.zeros(59), "regression", own)
    q = Protocol("published", max_samples=40, seed=3)
    kept = proto.subsample_index(60, 40, 3)
    for j, (_, test) in enumerate(q.outer_splits(np.zeros(40), "regression", own)):
        assert kept[test].tolist() == [i for i in kept if i % 10 == j]


def test_a_dataset_without_masks_is_refused_under_published():
    with pytest.raises(UsageError, match="has no published splits"):
        runner._outer_splits("friedman-generated", Protocol("published"), DataSources.from_settings(),
                             registry=load_registry())


# -- the error: RMSE on the target as stored --------------------------------------------------------

def test_the_error_is_the_rmse_on_the_stored_target():
    """Fitted on the standardised target, scored back in the stored unit: the RMSE of the predictions
    mapped back to the target's own scale (a closed form, not the code's path)."""
    rng = np.random.default_rng(1)
    y_train, y_test = rng.normal(5, 3, size=80), rng.normal(5, 3, size=20)
    pred_stored = y_test + rng.normal(0, 0.7, size=20)
    scaler = proto.Scaler.fit(np.zeros((80, 1)), y_train, "regression", "stored")
    assert scaler.y_min == pytest.approx(y_train.mean()) and scaler.y_range == pytest.approx(y_train.std(ddof=1))
    got = proto.score("regression", scaler.y(y_test), scaler.y(pred_stored), "stored", scaler.y_range)
    assert got == pytest.approx(np.sqrt(np.mean((y_test - pred_stored) ** 2)), rel=1e-12)
    assert proto.metric_name("regression", "stored") == "rmse"


# -- end to end on a user's data and masks ------------------------------------------------------------

def write_set(folder: Path, m=60, d=3, seed=0, masks=None, gz=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) * [1, 100, 0.01]
    y = 50 + 20 * np.sin(X[:, 0]) + X[:, 1] / 50 + rng.normal(0, 1, size=m)
    data, mask = folder / ("data.csv.gz" if gz else "data.csv"), folder / ("mask.csv.gz" if gz else "mask.csv")
    opener = gzip.open if gz else open
    with opener(data, "wt") as fh:
        np.savetxt(fh, np.c_[X, y], delimiter=",")
    with opener(mask, "wt") as fh:
        np.savetxt(fh, masks if masks is not None else masks_of(np.arange(m) % 10), fmt="%s", delimiter=",")
    reg = folder / "reg.yaml"
    reg.write_text(f"datasets:\n  toy:\n    file: {data.name}\n    format: csv-noheader\n    target: c{d}\n"
                   f"    splits: {{file: {mask.name}}}\n")
    return reg, X, y


def test_a_run_tests_each_split_on_its_mask_rows_in_the_stored_unit(tmp_path, capsys):
    from rfbench.cli import main

    reg, X, y = write_set(tmp_path)
    out = tmp_path / "out"
    main(["run", "--registry", str(reg), "--datasets", "toy", "--methods", "rff-gauss", "--features", "10",
          "--protocol", "published", "--repeats", "3", "--out", str(out), "--quiet", "--no-report"])
    records = [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]
    assert sorted(r["fold"] for r in records) == [0, 1, 2]
    assert {r["protocol"] for r in records} == {"published-r3-i5"} and {r["metric"] for r in records} == {"rmse"}
    assert {r["n_test"] for r in records} == {6} and {r["n_train"] for r in records} == {54}
    # the RMSE is in the target's unit (std ~ 14), not on standardised outputs (~ 1)
    errors = [r["error"] for r in records]
    assert all(1.0 < e < 3 * y.std() for e in errors)
    # a refit of split 0 exactly as the runner builds it gives the recorded error
    task = tasks.fold_task("toy", "rff-gauss", 0, Protocol("published", repeats=3), None,
                           registry=registry.load([reg]))
    est = task.cls(n_features=10, **task.common).fit(task.X_tr, task.y_tr)
    stored_pred = est.predict(task.X_te) * task.y_unit + y[np.arange(60) % 10 != 0].mean()
    assert np.sqrt(np.mean((stored_pred - y[np.arange(60) % 10 == 0]) ** 2)) == pytest.approx(
        next(r["error"] for r in records if r["fold"] == 0), rel=1e-9)
    # the splits' fingerprint is the masks file's sha256
    digest = hashlib.sha256((tmp_path / "mask.csv.gz").read_bytes()).hexdigest()
    assert runner.outer_splits_fingerprint("toy", Protocol("published"), registry=registry.load([reg])) \
        == f"sha256:{digest}"


def _bad_masks(kind):
    masks = masks_of(np.arange(60) % 10).astype(object)
    if kind == "short":
        return masks[:59]
    if kind == "no split":
        masks[7] = 0
    elif kind == "two splits":
        masks[8, :2] = 1
    elif kind == "value":
        masks[9, 3] = "0.5"
    return masks


@pytest.mark.parametrize("kind, message", [
    ("short", "have 59 rows and the data 60"),
    ("no split", "row 8 is in no split"),
    ("two splits", "row 9 is a test row of 3 splits"),
    ("value", "row 10, column 4 is '0.5'"),
    ("repeats", "split index 11 is out of range"),
    ("truncated", "cannot be read (EOFError"),
])
def test_bad_masks_are_one_line_exit_2_and_nothing_written(tmp_path, capsys, kind, message):
    reg, _, _ = write_set(tmp_path, masks=None if kind in ("repeats", "truncated") else _bad_masks(kind))
    if kind == "truncated":
        raw = (tmp_path / "mask.csv.gz").read_bytes()
        (tmp_path / "mask.csv.gz").write_bytes(raw[: len(raw) // 2])
    out = tmp_path / "deep" / "out"
    argv = ["run", "--registry", str(reg), "--datasets", "toy", "--methods", "rff-gauss", "--features", "10",
            "--protocol", "published", "--out", str(out), "--quiet"] + (["--repeats", "12"] if kind == "repeats" else [])
    one_line_error(capsys, argv, message)
    assert not (tmp_path / "deep").exists()


def test_a_changed_masks_file_is_refused_by_its_checksum(tmp_path):
    reg, _, _ = write_set(tmp_path)
    digest = hashlib.sha256((tmp_path / "mask.csv.gz").read_bytes()).hexdigest()
    reg.write_text(reg.read_text().replace("{file: mask.csv.gz}", f"{{file: mask.csv.gz, sha256: {digest}}}"))
    ds = registry.load([reg]).dataset("toy")
    assert load_split_masks(ds).n_splits == 10
    with gzip.open(tmp_path / "mask.csv.gz", "wt") as fh:
        np.savetxt(fh, masks_of((np.arange(60) + 1) % 10), fmt="%d", delimiter=",")
    with pytest.raises(UsageError, match=f"the registry expects {digest}"):
        load_split_masks(ds)


# -- the mirror -----------------------------------------------------------------------------------------

def test_every_mirrored_set_loads_with_its_masks(mirror_dir):
    for ds in registry.load().suite("uci"):
        loaded = load(ds, mirror_dir, registry=load_registry())
        own = load_split_masks(ds, mirror_dir)
        assert loaded.X.shape == (ds.m, ds.d) and len(own.split_of_row) == ds.m and own.n_splits == 10
        # 90/10: every split tests about a tenth of the rows
        sizes = np.bincount(own.split_of_row, minlength=10)
        assert sizes.sum() == ds.m and sizes.max() - sizes.min() <= max(2, ds.m // 50)
        # the target is centred as stored, and the inputs are centred but not scaled (hence the protocol's
        # standardisation on each training part)
        assert abs(loaded.y.mean()) < 1e-3 * max(1.0, loaded.y.std())
        assert np.abs(loaded.X.mean(axis=0)).max() < 1e-2 * max(1.0, loaded.X.std(axis=0).max())


def test_the_mirror_masks_are_the_repository_files(mirror_dir):
    manifest = pd.read_csv(mirror_dir / "MANIFEST.csv").set_index("file")["sha256"]
    for ds in registry.load().suite("uci"):
        assert manifest[ds.mirror.file] == ds.mirror.sha256 and manifest[ds.splits.file] == ds.splits.sha256


def test_the_report_shows_rmse_over_the_target_std(tmp_path, capsys):
    from rfbench.cli import main

    reg, _, y = write_set(tmp_path)
    out = tmp_path / "out"
    main(["run", "--registry", str(reg), "--datasets", "toy", "--methods", "rff-gauss", "--features", "10",
          "--protocol", "published", "--repeats", "2", "--out", str(out), "--quiet", "--no-report"])
    capsys.readouterr()
    errors = sorted(json.loads(p.read_text())["error"] for p in (out / "records").glob("*.json"))
    try:
        main(["report", str(out), "--layout", "gp", "--relative", "--format", "csv", "--registry", str(reg)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    table = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert table.loc[0, "mean"] == pytest.approx(np.mean(errors) / y.std(), rel=1e-9)
    one_line_error(capsys, ["report", str(out), "--relative", "--registry", str(reg)], "goes with --layout gp")


def test_datasets_info_names_the_splits_file_and_the_aliases(capsys, mirror_dir):
    from rfbench.cli import main

    try:
        main(["datasets", "info", "uci-kegg"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("name: uci-keggdirected (paper: kegg)")
    assert "published splits (--protocol published): uci-splits/keggdirected/test_mask.csv.gz: " in out
    assert "(present)" in out and "aliases: uci-kegg" in out
