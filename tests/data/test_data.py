"""Dataset registry and loaders: mirror checksums, generators, and clear errors for bad input."""


import numpy as np
import pytest

from rfbench import registry
from rfbench.data import load
from rfbench.data.arff import read_arff
from rfbench.data.generators import GENERATORS, breiman, friedman
from rfbench.errors import DataUnavailable, UsageError
from rfbench.registry import load as load_registry

GFC_NAMES = ["parkinsons-tm", "ujindoorloc", "ct-slice", "year-msd", "delta-ailerons", "kinematics",
             "cpu-activity", "bank", "pumadyn", "delta-elevators", "ailerons", "pole-telecom",
             "elevators", "cal-housing", "breiman", "friedman"]


def test_registry_has_the_16_gfc_datasets_and_suites():
    assert [d.name for d in registry.load().suite("gfc")] == GFC_NAMES
    assert [d.name for d in registry.load().suite("gfc-uci")] == GFC_NAMES[:4]
    assert [d.name for d in registry.load().suite("torgo")] == GFC_NAMES[4:]
    assert [d.name for d in registry.load().suite("synthetic")] == ["breiman-generated", "friedman-generated"]
    # a published comparison never falls back to a generator: the Torgo names have none
    assert not any(d.generator for d in registry.load().suite("gfc"))


def test_registered_sha256_match_the_manifest(mirror_dir):
    manifest = {line.split(",")[0]: line.split(",")[2]
                for line in (mirror_dir / "MANIFEST.csv").read_text().splitlines()[1:]}
    for ds in registry.load().datasets.values():
        if ds.mirror:
            assert manifest[ds.mirror.file] == ds.mirror.sha256, ds.name


@pytest.mark.parametrize("name", ["delta-ailerons", "kinematics", "cpu-activity", "bank", "pumadyn",
                                  "delta-elevators", "ailerons", "pole-telecom", "elevators", "cal-housing",
                                  "breiman", "friedman", "parkinsons-tm", "ujindoorloc"])
def test_mirror_files_load_with_registered_shape(mirror_dir, name):
    loaded = load(name, mirror_dir, registry=load_registry())
    assert loaded.source == "mirror"
    assert loaded.X.shape == registry.load().dataset(name).shape
    assert np.isfinite(loaded.X).all() and np.isfinite(loaded.y).all()


def test_arff_blank_lines_and_spaces(tmp_path):
    p = tmp_path / "x.arff"
    p.write_text("@relation r\n@attribute  a  numeric\n@attribute 'b c' real\n@attribute class numeric\n"
                 "@data\n\n1,2,3\n% comment\n\n4, 5, 6\n\n")
    df = read_arff(p)
    assert list(df.columns) == ["a", "b c", "class"] and df.shape == (2, 3)
    assert df.to_numpy().tolist() == [[1, 2, 3], [4, 5, 6]]


def test_generators_follow_the_published_formulas():
    X, y = breiman(m=5000, seed=1)
    assert X.shape == (5000, 10) and set(np.unique(X[:, 0])) == {-1.0, 1.0}
    assert set(np.unique(X[:, 1:])) == {-1.0, 0.0, 1.0}
    mean = np.where(X[:, 0] == 1, 3 + 3 * X[:, 1] + 2 * X[:, 2] + X[:, 3], -3 + 3 * X[:, 4] + 2 * X[:, 5] + X[:, 6])
    assert np.std(y - mean) == pytest.approx(1.0, abs=0.05)
    X, y = friedman(m=5000, seed=1)
    assert X.min() >= 0 and X.max() <= 1
    mean = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]
    assert np.std(y - mean) == pytest.approx(1.0, abs=0.05)
    np.testing.assert_array_equal(friedman(m=50, seed=3)[1], friedman(m=50, seed=3)[1])


def test_the_registry_accepts_exactly_the_generators_that_exist():
    assert set(registry.GENERATOR_NAMES) == set(GENERATORS)


def test_generated_sets_need_no_mirror_and_the_real_ones_are_never_generated(monkeypatch, tmp_path):
    monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("RFBENCH_CACHE_DIR", str(tmp_path))
    loaded = load("breiman-generated", registry=load_registry())
    assert loaded.source == "generator" and loaded.X.shape == (40768, 10)
    with pytest.raises(DataUnavailable, match="breiman"):
        load("breiman", allow_download=False, registry=load_registry())


def test_real_breiman_is_2dplanes_at_its_bayes_floor(mirror_dir):
    """2dplanes is the formula above plus N(0, 1) noise: the residual of the true mean, in units of
    the output range × 100, is the noise floor the GFC paper's breiman errors sit at (4.01-4.06)."""
    loaded = load("breiman", mirror_dir, registry=load_registry())
    X, y = loaded.X, loaded.y
    mean = np.where(X[:, 0] == 1, 3 + 3 * X[:, 1] + 2 * X[:, 2] + X[:, 3], -3 + 3 * X[:, 4] + 2 * X[:, 5] + X[:, 6])
    floor = 100 * np.sqrt(np.mean((y - mean) ** 2)) / np.ptp(y)
    assert floor == pytest.approx(4.02, abs=0.02)
    gen = load("breiman-generated", registry=load_registry()).y
    assert 100 * 1.0 / np.ptp(gen) > 4.15       # the generator's realisation: another range, another floor


def test_uci_gfc_sets_follow_the_paper(mirror_dir):
    """parkinsons-tm: the 21 columns other than total_UPDRS (the paper's d); ujindoorloc: both UCI
    files, 527 of the 528 columns other than LATITUDE (TIMESTAMP left out); pole-telecom: the 26
    non-constant inputs of pol."""
    import pandas as pd

    pk = load("parkinsons-tm", mirror_dir, registry=load_registry())
    raw = pd.read_csv(mirror_dir / "uci-gfc/parkinsons-tm/parkinsons_updrs.data")
    np.testing.assert_array_equal(pk.y, raw["total_UPDRS"].to_numpy())
    np.testing.assert_array_equal(pk.X, raw.drop(columns="total_UPDRS").to_numpy(float))
    uj = load("ujindoorloc", mirror_dir, registry=load_registry())
    tail = pd.read_csv(mirror_dir / "uci-gfc/ujiindoorloc/validationData.csv")
    np.testing.assert_array_equal(uj.y[-len(tail):], tail["LATITUDE"].to_numpy())
    np.testing.assert_array_equal(uj.X[-1], tail.drop(columns=["LATITUDE", "TIMESTAMP"]).to_numpy(float)[-1])
    pol = load("pole-telecom", mirror_dir, registry=load_registry())
    assert pol.X.shape == (15000, 26) and (pol.X.std(axis=0) > 0).all()


def test_bankmarketing_from_the_uci_file(mirror_dir):
    loaded = load("bankmarketing", mirror_dir, registry=load_registry())
    assert loaded.X.shape == (45211, 51) and loaded.source == "mirror"
    assert (loaded.y > 0).sum() == 5289          # 'yes' rows of bank-full.csv (11.7 %)


def test_corrupt_mirror_file_is_refused(mirror_dir, tmp_path):
    fake = tmp_path / "mirror"
    (fake / "torgo").mkdir(parents=True)
    src = (mirror_dir / "torgo" / "delta_ailerons.arff").read_bytes()
    (fake / "torgo" / "delta_ailerons.arff").write_bytes(src[:-200] + b"9" * 200)
    with pytest.raises(UsageError, match=r"sha256 .* corrupt or another version"):
        load("delta-ailerons", fake, registry=load_registry())


def test_unavailable_dataset_says_how_to_supply_it(monkeypatch):
    monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
    with pytest.raises(DataUnavailable, match="RFBENCH_DATA_DIR.*OpenML id 189|OpenML id 189"):
        load("kinematics", registry=load_registry())


def _custom_registry(tmp_path, monkeypatch, entry: str, extra_files=None):
    path = tmp_path / "datasets.yaml"
    path.write_text("suites: {s: test}\ndatasets:\n" + entry)
    monkeypatch.setenv("RFBENCH_DATASETS_YAML", str(path))
    return path


@pytest.mark.parametrize("entry, message", [
    ("  bad:\n    task: regression\n    suites: [s]\n    shape: [10, 2]\n", "entry 'bad': missing field 'target'"),
    ("  bad:\n    task: ranking\n    suites: [s]\n    shape: [10, 2]\n    target: y\n    generator: friedman\n",
     "entry 'bad': field 'task'"),
    ("  bad:\n    task: regression\n    suites: [s]\n    shape: [10]\n    target: y\n    generator: friedman\n",
     "entry 'bad': field 'shape'"),
    ("  bad:\n    task: regression\n    suites: [nope]\n    shape: [10, 2]\n    target: y\n    generator: friedman\n",
     "suite 'nope' is not declared"),
    ("  bad:\n    task: regression\n    suites: [s]\n    shape: [10, 2]\n    target: y\n"
     "    mirror: {file: a.csv, format: csv, sha256: xyz}\n", "mirror.sha256"),
])
def test_malformed_registry_entry_names_entry_and_field(tmp_path, monkeypatch, entry, message):
    _custom_registry(tmp_path, monkeypatch, entry)
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        registry.load()


def test_nan_in_data_is_refused(tmp_path, monkeypatch):
    import hashlib

    csv = tmp_path / "mirror" / "nan.csv"
    csv.parent.mkdir()
    csv.write_text("a,b,y\n1,2,3\n4,,6\n7,8,9\n")
    sha = hashlib.sha256(csv.read_bytes()).hexdigest()
    _custom_registry(tmp_path, monkeypatch, "  withnan:\n    task: regression\n    suites: [s]\n"
                     f"    shape: [3, 2]\n    target: y\n    mirror: {{file: nan.csv, format: csv, sha256: {sha}}}\n")
    with pytest.raises(UsageError, match="withnan.*1 missing or non-finite values"):
        load("withnan", tmp_path / "mirror", registry=load_registry())


GBRFF_TABLE1 = {  # GBRFF paper Table 1: n, d (and the published positive-class label)
    "wine": (178, 13), "sonar": (208, 60), "newthyroid": (215, 5), "heart": (270, 13), "bupa": (345, 6),
    "ionosphere": (351, 34), "wdbc": (569, 30), "balance": (625, 4), "australian": (690, 14),
    "pima": (768, 8), "vehicle": (846, 18), "german": (1000, 23), "splice": (3175, 60),
    "spambase": (4597, 57), "occupancy": (20560, 5),
}


def test_gbrff_suite_matches_table1_and_binarises(mirror_dir):
    names = [d.name for d in registry.load().suite("gbrff")]
    assert names == [*GBRFF_TABLE1, "bankmarketing"]           # the 16 of Table 1, its order
    for name, shape in GBRFF_TABLE1.items():
        loaded = load(name, mirror_dir, registry=load_registry())
        assert loaded.X.shape == shape, name
        assert set(np.unique(loaded.y)) == {-1.0, 1.0}, name
    # spot checks of the Table 1 maps: wine class 1 (59 rows) is +1; splice's file "-1" is +1
    assert (load("wine", mirror_dir, registry=load_registry()).y > 0).sum() == 59
    splice_file = (mirror_dir / "uci-gbrff/splice/splice.data").read_text().splitlines()
    n_minus = sum(line.startswith("-1") for line in splice_file if line.strip())
    assert (load("splice", mirror_dir, registry=load_registry()).y > 0).sum() == n_minus


def test_unmapped_class_label_is_refused(tmp_path, monkeypatch):
    import hashlib

    csv = tmp_path / "mirror" / "c.csv"
    csv.parent.mkdir()
    csv.write_text("1,2,a\n3,4,b\n5,6,c\n")
    sha = hashlib.sha256(csv.read_bytes()).hexdigest()
    _custom_registry(tmp_path, monkeypatch, "  cls:\n    task: classification\n    suites: [s]\n"
                     "    shape: [3, 2]\n    target: c2\n    labels: {negative: [a], positive: [b]}\n"
                     f"    mirror: {{file: c.csv, format: csv-noheader, sha256: {sha}}}\n")
    with pytest.raises(UsageError, match=r"labels \['c'\] that the registry maps to neither class"):
        load("cls", tmp_path / "mirror", registry=load_registry())
