"""SALSA paper (ICML 2016) datasets: readers of rfbench/data/prepare.py and their registry entries.

Every test that reads a mirror file skips cleanly without the mirror (``mirror_dir`` fixture).
"""

import csv
import math

import numpy as np
import pytest

from rfbench import protocol as proto
from rfbench import registry
from rfbench.data import load
from rfbench.data.prepare import PREPARERS, SALSA_NOISE_SEED, blog_word_columns, salsa_noise
from rfbench.registry import load as load_registry
from rfbench.reporting.published import published_dir

SALSA_NAMES = ["salsa-housing", "salsa-galaxy", "salsa-insulin", "salsa-skillcraft", "salsa-ccpp",
               "salsa-speech", "salsa-music", "salsa-telemonit", "salsa-propulsion", "salsa-airfoil",
               "salsa-forestfires", "salsa-blog"]

# Known differences from Table 1's D (documented in the registry notes):
# * telemonit: the paper's text drops motor_UPDRS and the sex column is constant on the female
#   subset, so 18 inputs remain; Table 1's 19 is the reference code's set (with motor_UPDRS).
KNOWN_D_DIFF = {"salsa-telemonit": (19, 18)}
NOT_IN_TABLE1 = {"salsa-blog"}  # App. D item 8 only

# Extra N(0, 1) inputs: dataset -> (number of raw inputs kept first, number of noise columns)
NOISE = {"salsa-ccpp": (4, 55), "salsa-airfoil": (5, 35)}

_LOADED: dict = {}


def _load(name, mirror_dir):
    key = (name, str(mirror_dir))
    if key not in _LOADED:
        _LOADED[key] = load(name, mirror_dir, registry=load_registry())
    return _LOADED[key]


def _raw_rows(path, sep):
    """The file's rows as lists of floats, parsed without numpy or pandas."""
    with open(path) as fh:
        return [[float(v) for v in (line.split(sep) if sep else line.split())]
                for line in fh if line.strip()]


# ------------------------------------------------------------------ registry (no mirror needed)

def test_salsa_suite_lists_the_datasets():
    assert "salsa" in registry.load().suites
    assert [d.name for d in registry.load().suite("salsa")] == SALSA_NAMES


@pytest.mark.parametrize("name", SALSA_NAMES)
def test_salsa_entries_are_complete(name):
    ds = registry.load().dataset(name)
    assert ds.task == "regression" and ds.suites == ("salsa",)
    assert ds.preprocess == name and name in PREPARERS
    assert ds.mirror is not None and ds.mirror.file.startswith("uci-salsa/")
    assert ds.mirror.format == ("mat" if ds.mirror.file.endswith(".mat") else "text")
    assert ds.holdout is not None and sum(ds.holdout) <= ds.m
    assert ds.paper and ds.notes


def test_salsa_d_and_n_match_table1_or_the_documented_difference():
    path = published_dir() / "salsa2016_table1.csv"
    with open(path, newline="") as fh:
        table = {row["dataset"]: (int(row["D"]), int(row["n"])) for row in csv.DictReader(fh)}
    covered = set()
    for name in SALSA_NAMES:
        ds = registry.load().dataset(name)
        if name in NOT_IN_TABLE1:
            assert ds.paper not in table
            continue
        D, n = table[ds.paper]  # the registry's paper name is the name printed in Table 1
        covered.add(ds.paper)
        assert ds.holdout[0] == n, name
        if name in KNOWN_D_DIFF:
            assert (D, ds.d) == KNOWN_D_DIFF[name], name
        else:
            assert ds.d == D, name
    # the four unreleased data sets are the only Table 1 rows without an entry
    assert set(table) - covered == {"fMRI", "School", "Bleeding", "Brain"}


# ------------------------------------------------------------------ mirror files

@pytest.mark.parametrize("name", SALSA_NAMES)
def test_salsa_dataset_loads_with_registered_shape(mirror_dir, name):
    loaded = _load(name, mirror_dir)
    ds = registry.load().dataset(name)
    assert loaded.source == "mirror"
    assert loaded.X.shape == ds.shape and loaded.y.shape == (ds.m,)
    assert np.isfinite(loaded.X).all() and np.isfinite(loaded.y).all()
    assert (np.ptp(loaded.X, axis=0) > 0).all(), "no constant input columns"


# name -> (file, separator (None: whitespace), row filter on the raw row, target column (1-based),
#          [(X column (0-based), raw column (1-based), transform)], first-row target as printed)
IDENT = None
TEXT_CHECKS = {
    "salsa-housing": ("housing.txt", None, None, 1, [(0, 2, IDENT), (2, 5, IDENT), (11, 14, IDENT)], 0.00632),
    "salsa-skillcraft": ("skillcraft.txt", ",", None, 16, [(0, 2, IDENT), (13, 15, IDENT), (14, 17, IDENT)], 28.0),
    "salsa-speech": ("parkinson21.txt", ",", None, 16, [(0, 2, IDENT), (13, 15, IDENT), (14, 21, IDENT), (20, 27, IDENT)], 166.533),
    "salsa-music": ("music.txt", None, None, 1, [(0, 2, IDENT), (89, 91, IDENT)], 2003.0),
    "salsa-telemonit": ("telemonitoring.txt", ",", lambda r: r[2] == 1, 6, [(0, 2, IDENT), (1, 4, IDENT), (2, 7, IDENT), (17, 22, IDENT)], 24.093),
    "salsa-propulsion": ("propulsion.txt", None, None, 1, [(0, 2, math.log), (6, 8, IDENT), (7, 10, IDENT), (9, 13, IDENT), (14, 18, IDENT)], 1.138),
    "salsa-airfoil": ("airfoil.txt", None, None, 6, [(0, 1, IDENT), (4, 5, IDENT)], 126.201),
    "salsa-forestfires": ("forestfires.txt", ",", None, 5, [(0, 1, IDENT), (3, 4, IDENT), (4, 6, IDENT), (9, 11, math.log1p)], 94.3),
    "salsa-blog": ("blog.txt", ",", None, 281, [(0, 51, IDENT), (11, 62, IDENT)], 4.0),
}


@pytest.mark.parametrize("name", sorted(TEXT_CHECKS))
def test_salsa_text_target_and_inputs_are_the_intended_columns(mirror_dir, name):
    file, sep, keep, target, inputs, first_target = TEXT_CHECKS[name]
    rows = _raw_rows(mirror_dir / "uci-salsa" / file, sep)
    if keep is not None:
        rows = [r for r in rows if keep(r)]
    loaded = _load(name, mirror_dir)
    assert len(rows) == len(loaded.y)
    first, last = rows[0], rows[-1]
    assert loaded.y[0] == pytest.approx(first[target - 1]) == pytest.approx(first_target)
    assert loaded.y[-1] == pytest.approx(last[target - 1])
    for j, col, f in inputs:
        f = f or (lambda v: v)
        assert loaded.X[0, j] == pytest.approx(f(first[col - 1])), (j, col)
        assert loaded.X[-1, j] == pytest.approx(f(last[col - 1])), (j, col)


def test_salsa_mat_targets_and_inputs(mirror_dir):
    from scipy.io import loadmat

    base = mirror_dir / "uci-salsa"
    galaxy, insulin, ccpp = (loadmat(base / f) for f in ("lrgReg.mat", "epidata.mat", "ccpp.mat"))
    g = _load("salsa-galaxy", mirror_dir)
    np.testing.assert_array_equal(g.X, galaxy["X"])
    np.testing.assert_array_equal(g.y, galaxy["Y"].ravel())
    assert g.y[0] == pytest.approx(-1552.68169239)
    i = _load("salsa-insulin", mirror_dir)
    np.testing.assert_array_equal(i.X, insulin["snp_data"])
    np.testing.assert_array_equal(i.y, insulin["insulin_data"].ravel())
    assert i.y[0] == pytest.approx(-0.46376483)
    c = _load("salsa-ccpp", mirror_dir)
    np.testing.assert_array_equal(c.X[:, :4], ccpp["XTrain"])
    np.testing.assert_array_equal(c.y, ccpp["YTrain"].ravel())
    assert c.y[0] == pytest.approx(454.63)


def test_telemonit_is_the_female_subset(mirror_dir):
    rows = _raw_rows(mirror_dir / "uci-salsa" / "telemonitoring.txt", ",")
    female = [r for r in rows if r[2] == 1]
    assert len(rows) == 5875 and len(female) == 1867 == registry.load().dataset("salsa-telemonit").m
    # motor_UPDRS (col 5) is not an input: no input column equals it
    X = _load("salsa-telemonit", mirror_dir).X
    motor = np.array([r[4] for r in female])
    assert not any(np.allclose(X[:, j], motor) for j in range(X.shape[1]))


def test_blog_word_columns_are_the_38_most_frequent(mirror_dir):
    L = np.array(_raw_rows(mirror_dir / "uci-salsa" / "blog.txt", ","))
    cols = blog_word_columns(L)
    assert len(cols) == 38 and all(63 <= c <= 262 for c in cols)
    counts = np.count_nonzero(L[:, 62:262], axis=0)
    chosen = counts[np.array(cols) - 63]
    others = np.delete(counts, np.array(cols) - 63)
    assert chosen.min() > others.max()  # no tie at the cut: the choice is unambiguous
    X = _load("salsa-blog", mirror_dir).X
    np.testing.assert_array_equal(X[:, 12:], L[:, np.array(cols) - 1])


@pytest.mark.parametrize("name", sorted(NOISE))
def test_extra_noise_columns_are_standard_normal_and_reproducible(mirror_dir, name):
    n_raw, k = NOISE[name]
    loaded = _load(name, mirror_dir)
    ds = registry.load().dataset(name)
    Z = loaded.X[:, n_raw:]
    m = len(Z)
    assert Z.shape == (m, k) and ds.d == n_raw + k
    # reproducible: the documented seed, and an independent second read
    np.testing.assert_array_equal(Z, salsa_noise(m, k, SALSA_NOISE_SEED))
    X2, _ = PREPARERS[name].load([mirror_dir / ds.mirror.file])
    np.testing.assert_array_equal(X2, loaded.X)
    # N(0, 1)-like: per-column mean and std, pooled kurtosis, no relation to the target
    se = 4 / np.sqrt(m)
    assert np.abs(Z.mean(axis=0)).max() < se
    assert np.abs(Z.std(axis=0, ddof=1) - 1).max() < 4 / np.sqrt(2 * m)
    assert abs(np.mean(Z**4) - 3) < 0.1
    yc = (loaded.y - loaded.y.mean()) / loaded.y.std()
    corr = (Z - Z.mean(0)).T @ yc / (m * Z.std(0))
    assert np.abs(corr).max() < se
    # after the holdout protocol's training standardisation they stay ~N(0, 1) on the test part
    tr, te = proto.outer_splits(proto.Protocol("holdout", seed=0), loaded.y, "regression", ds.holdout)[0]
    scaler = proto.Scaler.fit(loaded.X[tr], loaded.y[tr], "regression", "standard")
    Zte = scaler.x(loaded.X[te])[:, n_raw:]
    assert abs(Zte.mean()) < 4 / np.sqrt(Zte.size) + 4 / np.sqrt(len(tr))
    assert abs(Zte.std() - 1) < 0.05


@pytest.mark.parametrize("name", SALSA_NAMES)
def test_holdout_split_with_registry_sizes_fits(mirror_dir, name):
    ds = registry.load().dataset(name)
    y = _load(name, mirror_dir).y
    for seed in (0, 1):
        (tr, te), = proto.outer_splits(proto.Protocol("holdout", seed=seed), y, "regression", ds.holdout)
        assert (len(tr), len(te)) == ds.holdout
        assert len(np.intersect1d(tr, te)) == 0 and max(tr.max(), te.max()) < len(y)
        assert np.std(y[tr], ddof=1) > 0  # standardising y on the training part is defined
