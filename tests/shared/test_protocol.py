"""The protocol classes: every key the committed results, baselines and specs carry reads back to a
protocol that writes the same key, and every protocol's outer splits are those of the regex-keyed
protocol module they replaced (digests computed with main at 2ba6293)."""

import copy
import dataclasses
import hashlib
import pickle

import numpy as np
import pytest

from rfbench import protocol as proto
from rfbench.data.sources import DataSources
from rfbench.errors import UsageError
from rfbench.execution import runner
from rfbench.experiments import baselines
from rfbench.protocol import CV, PROTOCOL_CLASSES, Fixed, Holdout, HoldoutSizes, Protocol, Splits
from rfbench.registry import ROOT
from rfbench.registry import load as load_registry


def committed_result_keys() -> set[str]:
    from rfbench.store import load_results

    keys = set()
    for path in sorted((ROOT / "results").iterdir()):
        if path.is_dir() and ((path / "records").is_dir() or (path / "results.csv").is_file()):
            df = load_results([path], mixed_protocols=True, missing_ok=True)
            if "protocol" in df:
                keys |= set(df["protocol"].dropna().astype(str))
    return keys


def test_every_committed_key_round_trips_through_its_class():
    from rfbench.experiments.spec import all_specs

    keys = committed_result_keys()
    assert {"cv-o10-i5", "splits-r20-t0.3-i5", "holdout-t0.3-i5", "fixed-r10-i5"} <= keys
    for path in baselines.shipped():
        b = baselines.read_file(path)
        keys |= set(b.frame["protocol"].dropna().astype(str)) | {key for key, _, _ in b.fingerprints}
        for key, settings in b.protocols.items():          # the settings a baseline file records
            keys.add(key)
            assert Protocol(**settings).key() == key
            assert Protocol.from_key(key) == Protocol(**settings, seed=0)
    for spec in all_specs(load_registry()):
        keys |= {p.key() for p in (spec.plan and spec.plan.protocol, spec.ci and spec.ci.plan.protocol) if p}
    for key in keys:
        p = Protocol.from_key(key, seed=3)
        assert p.key() == key and p.seed == 3 and isinstance(p, PROTOCOL_CLASSES[p.name])


@pytest.mark.parametrize("key, cls, outer, scaling", [
    ("cv-o10-i5", CV, 10, "range"), ("cv-o3-i2-max300", CV, 3, "range"),
    ("splits-r20-t0.3-i5", Splits, 20, "range"), ("splits-r20-t1e-05-i5", Splits, 20, "range"),
    ("holdout-t0.25-i3", Holdout, 1, "standard"), ("fixed-r10-i5-max2000", Fixed, 10, "pm1"),
])
def test_a_key_names_its_class_outer_count_and_scaling(key, cls, outer, scaling):
    p = Protocol.from_key(key)
    assert type(p) is cls and p.key() == key and p.n_outer == outer == proto.outer_count_of_key(key)
    assert p.target_scaling == scaling and Protocol(**p.key_settings()) == p


@pytest.mark.parametrize("key", ["nope", "cv-o10", "cv-o10-i5-x", "CV-o10-i5", "cv-o1-i5", "splits-r20-i5", ""])
def test_an_unreadable_key_is_one_line_or_none(key):
    with pytest.raises(UsageError):
        Protocol.from_key(key)
    assert proto.read_key(key) is None and proto.outer_count_of_key(key) is None


def test_the_name_picks_the_class_and_the_class_its_name():
    assert [type(Protocol(n)) for n in ("cv", "splits", "holdout", "fixed")] == [CV, Splits, Holdout, Fixed]
    assert type(Protocol()) is CV and Splits(repeats=3) == Protocol("splits", repeats=3)
    assert Splits().key() == "splits-r20-t0.3-i5" and Protocol(**Fixed().__dict__) == Fixed()
    with pytest.raises(UsageError, match="unknown protocol 'bogus'; use one of cv, splits, holdout, fixed"):
        Protocol("bogus")
    with pytest.raises(UsageError, match="not a CV protocol"):
        CV("splits")
    with pytest.raises(UsageError, match="not a Splits protocol"):
        Splits.from_key("cv-o10-i5")
    p = Holdout(seed=4, max_samples=300)        # worker processes get a copy: same class, same settings
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p), dataclasses.replace(p, seed=4)):
        assert type(q) is Holdout and q == p and hash(q) == hash(p)


def test_the_command_line_offers_every_protocol():
    from rfbench import cli

    choices = next(o.type.choices for o in cli.run.params if o.name == "protocol_name")
    assert tuple(choices) == proto.PROTOCOLS == tuple(PROTOCOL_CLASSES)


def digest(splits) -> str:
    """Both index arrays of every split, in order."""
    text = "".join(" ".join(map(str, np.asarray(tr).tolist())) + " | " + " ".join(map(str, np.asarray(te).tolist()))
                   + "\n" for tr, te in splits)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: case → (protocol settings, task, registry holdout sizes (n_train, n_test, split: files))
CASES = {
    "cv": (dict(name="cv", outer_folds=5, inner_folds=3, seed=1), "regression", None),
    "cv-classes": (dict(name="cv", outer_folds=4, inner_folds=2), "multiclass", None),
    "splits": (dict(name="splits", repeats=6, seed=2), "regression", None),
    "splits-classes": (dict(name="splits", repeats=5, test_size=0.25, seed=3), "multiclass", None),
    "holdout-sizes": (dict(name="holdout", seed=4), "regression", (100, 40, False)),
    "holdout": (dict(name="holdout", test_size=0.2, seed=5), "regression", None),
    "holdout-classes": (dict(name="holdout", test_size=0.2, seed=5), "multiclass", None),
    "holdout-files": (dict(name="holdout", seed=6), "regression", (120, 37, True)),
    "fixed": (dict(name="fixed", repeats=3, seed=7), "multiclass", (120, 37, True)),
    "fixed-max": (dict(name="fixed", repeats=2, seed=8, max_samples=157), "regression", (150, 50, True)),
}
#: digest of rfbench.protocol.outer_splits at main 2ba6293 (the regex-keyed module), per case
BEFORE = {
    "cv": "7cb8b0321da42d87", "cv-classes": "e255440244b40db9", "splits": "a3aa5b594504683e",
    "splits-classes": "0e01dd66f1a7d2d2", "holdout-sizes": "f77febf43c216ccd", "holdout": "5eca85354eed71bb",
    "holdout-classes": "0e1ec9981697a458", "holdout-files": "7b60f7f92a06897f", "fixed": "8abeffdb80e076c0",
    "fixed-max": "0161986e9881f8e0",
}


@pytest.mark.parametrize("case", CASES)
def test_outer_splits_are_those_before_the_classes(case):
    settings, task, sizes = CASES[case]
    rng = np.random.default_rng(2024)
    y_reg, y_cls = rng.normal(size=157), rng.integers(0, 3, size=157)
    y = y_cls if task == "multiclass" else y_reg
    p = Protocol(**settings)
    splits = p.outer_splits(y, task, sizes and HoldoutSizes(*sizes))
    assert len(splits) == p.n_outer and digest(splits) == BEFORE[case]
    assert digest(proto.outer_splits(p, y, task, sizes and HoldoutSizes(*sizes))) == BEFORE[case]


@pytest.mark.parametrize("key, before", [("cv-o3-i2-max300", "d0b58b37d518ff47"),
                                         ("splits-r3-t0.3-i5-max300", "9f3b07db2de83d27"),
                                         ("holdout-t0.3-i5-max300", "e89effe19712535f")])
def test_outer_splits_of_a_generated_dataset_are_those_before_the_classes(key, before):
    splits, _ = runner._outer_splits("friedman-generated", Protocol.from_key(key), DataSources.from_settings(),
                                        registry=load_registry())
    assert digest(splits) == before
