"""Evaluation protocols: one class per protocol (its key, outer splits and target scaling), seeded
inner splits, train-fold scaling and the error measures.

Splits are index arrays computed once per (dataset, seed, protocol) and are identical for every
method. ``Protocol(name, ...)`` builds the class registered under ``name`` (:data:`PROTOCOL_CLASSES`);
:meth:`Protocol.key` writes the key every result carries and :meth:`Protocol.from_key` reads it back.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rfbench.errors import UsageError


class HoldoutSizes(tuple):
    """(n_train, n_test) of a dataset's paper split (its registry ``holdout`` entry), a 2-tuple;
    ``fixed`` True: the split of the data files themselves (``split: files``: first n_train rows in
    file order, then n_test; taken by :class:`Holdout` instead of a permutation and by :class:`Fixed`),
    else the sizes of a seeded random split."""

    def __new__(cls, n_train: int, n_test: int, fixed: bool = False):
        self = super().__new__(cls, (int(n_train), int(n_test)))
        self.fixed = bool(fixed)
        return self

    def __getnewargs__(self):          # pickling (worker processes) rebuilds it with its flag
        return (self[0], self[1], self.fixed)

    def __repr__(self) -> str:
        return f"HoldoutSizes({self[0]}, {self[1]}, fixed={self.fixed})"


@dataclass(frozen=True, eq=False)
class SplitAssignment:
    """A dataset's published fixed splits, read from its masks file (one 0/1 column per split, row i
    a test row of split j where column j is 1): ``split_of_row[i]`` is the one split that tests row i.
    ``path`` and ``sha256`` name the file (the sha256 is the splits' fingerprint)."""

    split_of_row: np.ndarray
    n_splits: int
    path: str
    sha256: str

    @classmethod
    def from_masks(cls, masks, path: str, sha256: str) -> SplitAssignment:
        """Checked masks (a 2-D array of "0"/"1" strings or numbers): a UsageError naming the file and
        the first offending row otherwise."""
        masks = np.asarray(masks)
        if masks.ndim != 2 or masks.shape[0] == 0 or masks.shape[1] == 0:
            raise UsageError(f"split masks {path}: no rows or no columns; expected one 0/1 column per split")
        text = np.char.strip(masks.astype(str))
        bad = ~np.isin(text, ("0", "1"))
        if bad.any():
            row, col = (int(v) for v in np.argwhere(bad)[0])
            raise UsageError(f"split masks {path}: row {row + 1}, column {col + 1} is {str(text[row, col])!r}; every value "
                             "must be 0 or 1 (1: a test row of that split)")
        ones = text == "1"
        per_row = ones.sum(axis=1)
        wrong = np.flatnonzero(per_row != 1)
        if wrong.size:
            row = int(wrong[0])
            what = "in no split" if per_row[row] == 0 else f"a test row of {int(per_row[row])} splits"
            raise UsageError(f"split masks {path}: row {row + 1} is {what} ({wrong.size} such row"
                             f"{'s' * (wrong.size != 1)}); each row must be a test row of exactly one split")
        split = np.argmax(ones, axis=1).astype(np.int16)
        split.flags.writeable = False
        return cls(split, int(masks.shape[1]), str(path), f"sha256:{sha256}" if sha256 else "")


#: protocol name → its class (filled by :func:`_register`)
PROTOCOL_CLASSES: dict[str, type[Protocol]] = {}


def _register(cls):
    PROTOCOL_CLASSES[cls.__dataclass_fields__["name"].default] = cls
    return cls


#: what a dataset itself says of its outer splits (rfbench.execution.tasks.own_splits): its paper
#: split's sizes (registry ``holdout``; a plain (n_train, n_test) pair is a seeded random split of
#: those sizes), its published split masks, or nothing
OwnSplits = HoldoutSizes | SplitAssignment | tuple[int, int] | None


@dataclass(frozen=True)
class Protocol:
    """The settings of an evaluation protocol, everything that changes the numbers but the method.

    ``Protocol("splits", ...)`` (or ``Protocol(**settings)``) is an instance of the class registered
    under that name; each class owns its key's fields (:attr:`KEY_FIELDS`), its outer splits, its
    outer count and its target scaling. The fields a protocol does not use keep their defaults.
    """

    name: str = "cv"
    outer_folds: int = 10
    inner_folds: int = 5
    seed: int = 0
    repeats: int = 20          # Splits, Fixed
    test_size: float = 0.3     # Splits, Holdout
    max_samples: int | None = None

    #: what the key writes between the name and ``-i<inner folds>``: (letter, field, format spec)
    KEY_FIELDS: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    #: how regression outputs are scaled: to range one (GFC), standardised (SALSA) or to [−1, 1]
    #: (EERF, "pm1"); it also names the error measure (see :func:`score`)
    target_scaling: ClassVar[str] = "range"

    def __new__(cls, *args, **kwargs):
        name = args[0] if args else kwargs.get("name", cls.__dataclass_fields__["name"].default)
        target = PROTOCOL_CLASSES.get(name) if isinstance(name, str) else None
        if target is None:
            raise UsageError(f"unknown protocol '{name}'; use one of {', '.join(PROTOCOL_CLASSES)}")
        if not issubclass(target, cls):
            raise UsageError(f"protocol '{name}' is not a {cls.__name__} protocol")
        return object.__new__(target)

    def __post_init__(self):
        if self.outer_folds < 2 or self.inner_folds < 2:
            raise UsageError("--outer-folds and --inner-folds must be at least 2")
        if not 0 < self.test_size < 1:
            raise UsageError(f"--test-size {self.test_size:g} must be between 0 and 1 (a fraction of the rows), "
                             "e.g. 0.3")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            raise UsageError(f"--seed {self.seed} must be an integer from 0 to 2**32 - 1")
        if self.repeats < 1:
            raise UsageError(f"--repeats {self.repeats} must be at least 1")
        if self.max_samples is not None and self.max_samples < 2:
            raise UsageError(f"--max-samples {self.max_samples} must be at least 2")

    @property
    def n_outer(self) -> int:
        """Outer folds / splits of a complete cell (per seed)."""
        raise NotImplementedError

    def key(self) -> str:
        """Identifies everything that changes the numbers (part of every result's resume key), e.g.
        'cv-o10-i5', 'splits-r20-t0.3-i5', 'holdout-t0.3-i5', 'fixed-r10-i5-max2000'; the seed is
        not part of it."""
        parts = [self.name, *(letter + format(getattr(self, field), spec) for letter, field, spec in self.KEY_FIELDS),
                 f"i{self.inner_folds}"]
        if self.max_samples:
            parts.append(f"max{self.max_samples}")
        return "-".join(parts)

    def key_settings(self) -> dict:
        """The settings the key stands for (the name, its key fields, inner folds, max samples)."""
        return {"name": self.name, **{field: getattr(self, field) for _, field, _ in self.KEY_FIELDS},
                "inner_folds": self.inner_folds, "max_samples": self.max_samples}

    @classmethod
    def from_key(cls, key: str, seed: int = 0) -> Protocol:
        """The protocol of a key written by :meth:`key` (with ``seed``, which the key leaves out);
        a UsageError for a key it cannot read."""
        text = str(key)
        target = PROTOCOL_CLASSES.get(text.partition("-")[0])
        match = target._key_pattern().fullmatch(text) if target is not None else None
        if match is None:
            raise UsageError(f"cannot read protocol key {key!r} (e.g. cv-o10-i5)")
        if not issubclass(target, cls):
            raise UsageError(f"protocol key {key!r} is not a {cls.__name__} protocol's")
        settings = {field: (float if spec == "g" else int)(match[field]) for _, field, spec in target.KEY_FIELDS}
        max_samples = int(match["max_samples"]) if match["max_samples"] else None
        return target(**settings, inner_folds=int(match["inner_folds"]), max_samples=max_samples, seed=seed)

    @classmethod
    def _key_pattern(cls) -> re.Pattern:
        fields = "".join(f"-{letter}(?P<{field}>{'[0-9.e+-]+' if spec == 'g' else '[0-9]+'})"
                         for letter, field, spec in cls.KEY_FIELDS)
        name = cls.__dataclass_fields__["name"].default
        return re.compile(f"{re.escape(name)}{fields}-i(?P<inner_folds>[0-9]+)(?:-max(?P<max_samples>[0-9]+))?")

    def outer_splits(self, y: np.ndarray, task: str,
                     own: OwnSplits = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """The outer (train, test) index pairs of a dataset whose outputs are ``y``; identical for
        every method. ``own``: what the dataset itself says of its splits
        (rfbench.execution.tasks.own_splits): its registry ``holdout`` entry (a :class:`HoldoutSizes`,
        read by Holdout and Fixed) or its published split masks (a :class:`SplitAssignment`, read by
        Published); None: neither."""
        raise NotImplementedError

    def _random_splits(self, y: np.ndarray, task: str, n_splits: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """``n_splits`` seeded random splits with ``test_size`` of the rows for testing, stratified
        for classification (Splits, and Holdout without sizes)."""
        from sklearn.model_selection import StratifiedShuffleSplit

        m = len(y)
        n_test = int(round(self.test_size * m))
        if not 1 <= n_test < m:
            raise UsageError(f"--test-size {self.test_size:g} of the dataset's {m} rows leaves {n_test} test and "
                             f"{m - n_test} training rows; choose a test size that keeps both non-empty")
        if task in ("classification", "multiclass"):
            splitter = StratifiedShuffleSplit(n_splits, test_size=self.test_size, random_state=self.seed)
            return list(splitter.split(np.zeros((m, 1)), y))
        rng = np.random.default_rng(self.seed)
        out = []
        for _ in range(n_splits):
            perm = rng.permutation(m)
            out.append((np.sort(perm[n_test:]), np.sort(perm[:n_test])))
        return out


@_register
@dataclass(frozen=True)
class CV(Protocol):
    """Nested cross-validation (GFC paper §3): outer K-fold CV (``outer_folds``, default 10), inner
    k-fold CV (``inner_folds``, default 5) inside each outer training part; outputs scaled to range
    one on the training part; error = RMSE × 100. Its outer test parts partition the rows, so a run
    stores the fold of every row (folds/<dataset>.csv). Key: ``cv-o<outer>-i<inner>``."""

    name: str = "cv"
    KEY_FIELDS: ClassVar = (("o", "outer_folds", ""),)

    @property
    def n_outer(self) -> int:
        return self.outer_folds

    def outer_splits(self, y, task, own=None):
        # imported here, not with the module: status and report load no scikit-learn
        from sklearn.model_selection import KFold

        m = len(y)
        if m < self.outer_folds * self.inner_folds:
            raise UsageError(f"dataset has {m} rows, fewer than outer × inner folds "
                             f"({self.outer_folds} × {self.inner_folds}); lower the fold counts")
        kf = KFold(self.outer_folds, shuffle=True, random_state=self.seed)
        return list(kf.split(np.zeros((m, 1))))


@_register
@dataclass(frozen=True)
class Splits(Protocol):
    """Repeated random splits (GBRFF paper §4): ``repeats`` seeded train/test splits with
    ``test_size`` of the rows for testing (stratified for classification); inner k-fold CV.
    Key: ``splits-r<repeats>-t<test size>-i<inner>``."""

    name: str = "splits"
    KEY_FIELDS: ClassVar = (("r", "repeats", ""), ("t", "test_size", "g"))

    @property
    def n_outer(self) -> int:
        return self.repeats

    def outer_splits(self, y, task, own=None):
        return self._random_splits(y, task, self.repeats)


@_register
@dataclass(frozen=True)
class Holdout(Protocol):
    """One seeded train/test split (SALSA paper): the sizes of the dataset's registry ``holdout``
    entry when it has one (rows beyond their sum are left out, as in the SALSA reference code; the
    files' own split for ``split: files``), else ``test_size``; inputs and outputs standardised with
    training statistics; error = test MSE on the standardised output (SALSA App. D).
    Key: ``holdout-t<test size>-i<inner>``."""

    name: str = "holdout"
    KEY_FIELDS: ClassVar = (("t", "test_size", "g"),)
    target_scaling: ClassVar[str] = "standard"

    @property
    def n_outer(self) -> int:
        return 1

    def outer_splits(self, y, task, own=None):
        m = len(y)
        if isinstance(own, HoldoutSizes) and own.fixed:
            return [fixed_split(self, m, own)]
        if not isinstance(own, tuple) or not own:        # no sizes (None, or published masks)
            return self._random_splits(y, task, 1)
        n_tr, n_te = own
        if n_tr + n_te > m:
            raise UsageError(f"holdout sizes {n_tr} + {n_te} exceed the {m} rows of the dataset")
        perm = np.random.default_rng(self.seed).permutation(m)
        return [(np.sort(perm[:n_tr]), np.sort(perm[n_tr:n_tr + n_te]))]


@_register
@dataclass(frozen=True)
class Fixed(Protocol):
    """The dataset's own train/test split (EERF paper §Experiments, method-notes §10.2), the one its
    files define (registry ``holdout: {train, test, split: files}``: the first ``train`` rows in file
    order, i.e. the training file, for training and the next ``test`` rows, the test file, for
    testing; never shuffled, the same for every seed), fitted ``repeats`` times: each repeat is an
    "outer fold" of the same split whose estimator seed (tasks.method_seed), hence whose random
    features, N₀ subsample and inner folds, are new, so that the spread over repeats is the spread of
    the random-feature draws (the paper's standard errors). Inputs standardised on the training part,
    regression responses mapped to [−1, 1] by the training range ("pm1"); error = the test
    misclassification rate in % (two or more classes), or 100 × the test MSE of the [−1, 1] responses
    for regression. With ``max_samples`` the seeded subset of the rows keeps their file order, so the
    split is the kept rows of the training part, then those of the test part.
    Key: ``fixed-r<repeats>-i<inner>``."""

    name: str = "fixed"
    KEY_FIELDS: ClassVar = (("r", "repeats", ""),)
    target_scaling: ClassVar[str] = "pm1"

    @property
    def n_outer(self) -> int:
        return self.repeats

    def outer_splits(self, y, task, own=None):
        if not (isinstance(own, HoldoutSizes) and own.fixed):
            raise UsageError("protocol fixed runs on a dataset's own train/test split, and this dataset has none "
                             "(datasets.yaml: holdout: {train: rows, test: rows, split: files}); use cv, splits or "
                             "holdout")
        return [fixed_split(self, len(y), own)] * self.repeats


@_register
@dataclass(frozen=True)
class Published(Protocol):
    """The dataset's own published fixed splits (Yang et al. 2015, Wilson et al. 2016 and later GP
    papers on the UCI sets of suite ``uci``): split j tests exactly the rows whose mask column j is 1
    and trains on the rest (:class:`SplitAssignment`, read from the registry's ``splits`` file); the
    first ``repeats`` splits (default 10, all of them) are the outer folds, the same for every seed
    (the seed draws the inner folds and the estimators' random state). Hyper-parameters are chosen by
    seeded inner k-fold CV inside each training part. Inputs standardised on the training part (the
    mirror's inputs are centred but not scaled); the target is standardised on the training part for
    fitting and the error is the test RMSE on the target as stored (the papers' unit, "stored").
    Key: ``published-r<splits>-i<inner>``."""

    name: str = "published"
    repeats: int = 10
    KEY_FIELDS: ClassVar = (("r", "repeats", ""),)
    target_scaling: ClassVar[str] = "stored"

    @property
    def n_outer(self) -> int:
        return self.repeats

    def outer_splits(self, y, task, own=None):
        if not isinstance(own, SplitAssignment):
            raise UsageError("protocol published runs on a dataset's published splits, and this dataset has none "
                             "(datasets.yaml: splits: {file, sha256}); use cv, splits or holdout")
        m, total = len(y), len(own.split_of_row)
        if m == total:
            split = own.split_of_row
        elif self.max_samples and m == min(self.max_samples, total):
            split = own.split_of_row[subsample_index(total, self.max_samples, self.seed)]
        else:
            raise UsageError(f"split masks {own.path} have {total} rows and the data {m}; the masks belong to another "
                             "version of the data: restore the registered files")
        if self.repeats > own.n_splits:
            raise UsageError(f"split index {self.repeats - 1} is out of range: {own.path} holds {own.n_splits} splits "
                             f"(0-{own.n_splits - 1}); use --repeats {own.n_splits} or fewer")
        out = []
        for j in range(self.repeats):
            test = np.flatnonzero(split == j)
            if not 0 < test.size < m:
                raise UsageError(f"split {j} of {own.path} leaves {test.size} test rows of {m}"
                                 + (f" after --max-samples {self.max_samples}" if self.max_samples else "")
                                 + "; keep both parts non-empty")
            out.append((np.flatnonzero(split != j), test))
        return out


#: the protocol names, in the order the command line offers them
PROTOCOLS = tuple(PROTOCOL_CLASSES)


def read_key(key) -> Protocol | None:
    """:meth:`Protocol.from_key`, or None for a key it cannot read."""
    try:
        return Protocol.from_key(key)
    except UsageError:
        return None


def outer_count_of_key(key: str) -> int | None:
    """Outer folds / splits a complete cell of the protocol ``key`` has: 'cv-o10-i5' → 10,
    'splits-r20-t0.3-i5' → 20, 'holdout-…' → 1, 'fixed-r10-i5' → 10; None for a key it cannot read."""
    protocol = read_key(key)
    return None if protocol is None else protocol.n_outer


def subsample_index(m: int, max_samples: int | None, seed: int) -> np.ndarray:
    """Rows kept by ``--max-samples`` (seeded, sorted); all rows when not set."""
    if not max_samples or max_samples >= m:
        return np.arange(m)
    rng = np.random.default_rng([seed, 7919])
    return np.sort(rng.choice(m, size=max_samples, replace=False))


def outer_splits(protocol: Protocol, y: np.ndarray, task: str,
                 own: OwnSplits = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """``protocol.outer_splits(y, task, own)``: the outer (train, test) index pairs."""
    return protocol.outer_splits(y, task, own)


def fixed_split(protocol: Protocol, m: int, sizes: HoldoutSizes) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) indices of a dataset's own split, rows in file order: the first n_train rows
    train, the next n_test test. ``m`` rows: all of them (m = n_train + n_test), or the seeded subset
    of ``--max-samples`` (:func:`subsample_index` of the whole, sorted, so the kept training rows
    still come first)."""
    n_tr, n_te = sizes
    total = n_tr + n_te
    if m == total:
        n_kept_train = n_tr
    elif protocol.max_samples and m == min(protocol.max_samples, total):
        n_kept_train = int(np.searchsorted(subsample_index(total, protocol.max_samples, protocol.seed), n_tr))
    else:
        raise UsageError(f"the dataset has {m} rows, its own split {n_tr} + {n_te} = {total}; the data is another "
                         "version than the registry's holdout entry")
    if not 0 < n_kept_train < m:
        raise UsageError(f"--max-samples {protocol.max_samples} leaves {n_kept_train} training and {m - n_kept_train} "
                         "test rows of the dataset's own split; keep both non-empty")
    return np.arange(n_kept_train), np.arange(n_kept_train, m)


def fold_assignment(splits, m: int) -> np.ndarray:
    """For K-fold CV: the outer fold of every row (−1 for rows never tested)."""
    fold = np.full(m, -1, dtype=np.int16)
    for k, (_, te) in enumerate(splits):
        fold[te] = k
    return fold


def folds_fingerprint(fold_of_row) -> str:
    """The fingerprint of an outer-fold assignment: sha256 of the fold of every row in row order,
    as decimal integers one per line (``"9\\n2\\n..."``; -1 for a row never tested). Defined on the
    values, not on a file's bytes or an array's dtype, so ``folds/<dataset>.csv`` and an assignment
    computed in memory give the same fingerprint. Two runs share their outer folds exactly when
    their fingerprints of every dataset (and seed) agree."""
    folds = np.asarray(fold_of_row)
    if folds.ndim != 1 or (folds.size and not np.issubdtype(folds.dtype, np.integer)):
        raise ValueError("a fold assignment is one integer per row")
    text = "".join(f"{int(f)}\n" for f in folds.tolist())
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def splits_fingerprint(splits) -> str:
    """The fingerprint of outer splits stored nowhere (the splits, holdout and fixed protocols): sha256
    of each split's test row indices, the splits in their order, as decimal integers separated by
    spaces, one line per split (``"4 0 7\n2 5 1\n"``). The indices keep the order
    :func:`rfbench.protocol.outer_splits` gives them (the order in which the runner feeds the test
    rows), so two runs share this fingerprint exactly when they test the same rows in every split.
    The training rows are not hashed: a split's test rows follow from the seed's permutation of all
    rows, so another row count, seed, test size or repeat count changes them."""
    text = "".join(" ".join(str(int(i)) for i in np.asarray(test).tolist()) + "\n" for _, test in splits)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def inner_splits(protocol: Protocol, y_train: np.ndarray, task: str, outer_index: int):
    """The inner CV folds of one outer training part (seeded by the run seed and outer index)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    seed = int(np.random.default_rng([protocol.seed, outer_index, 104729]).integers(2**31 - 1))
    m = len(y_train)
    if m < protocol.inner_folds:
        raise UsageError(f"an outer training part has {m} rows, fewer than {protocol.inner_folds} inner folds")
    if task in ("classification", "multiclass"):
        _, counts = np.unique(y_train, return_counts=True)
        if counts.min() >= protocol.inner_folds:
            kf = StratifiedKFold(protocol.inner_folds, shuffle=True, random_state=seed)
            return [(tr, va) for tr, va in kf.split(np.zeros((m, 1)), y_train)]
    kf = KFold(protocol.inner_folds, shuffle=True, random_state=seed)
    return [(tr, va) for tr, va in kf.split(np.zeros((m, 1)))]


@dataclass
class Scaler:
    """Train-fold statistics only: inputs standardised, outputs scaled to range one (regression),
    standardised ("standard") or mapped to [−1, 1] ("pm1": y_min holds the centre of the training
    range, y_range its half-width)."""

    x_mean: np.ndarray
    x_std: np.ndarray
    y_min: float = 0.0
    y_range: float = 1.0

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray, task: str, target_scaling: str = "range",
            inputs: str = "columns") -> Scaler:
        """``inputs``: "columns" standardises each input by its own mean and std; "joint" by one
        mean and std over every entry (a dataset's ``scale_inputs``: pixels keep their relative
        scale, so rarely inked border pixels are not inflated to unit variance)."""
        if inputs == "joint":
            mean = np.full(X.shape[1], X.mean())
            std = np.full(X.shape[1], X.std() or 1.0)
        elif inputs == "columns":
            mean = X.mean(axis=0)
            std = X.std(axis=0)
            std[std == 0] = 1.0  # constant inputs stay constant (zero) instead of dividing by zero
        else:
            raise UsageError(f"inputs must be scaled by 'columns' or 'joint', got {inputs!r}")
        if task == "regression" and target_scaling in ("standard", "stored"):
            return cls(mean, std, float(y.mean()), float(y.std(ddof=1)) or 1.0)
        if task == "regression" and target_scaling == "pm1":
            y_min, y_max = float(y.min()), float(y.max())
            return cls(mean, std, 0.5 * (y_min + y_max), 0.5 * (y_max - y_min) or 1.0)
        if task == "regression":
            y_min, y_max = float(y.min()), float(y.max())
            return cls(mean, std, y_min, (y_max - y_min) or 1.0)
        return cls(mean, std)

    def x(self, X: np.ndarray) -> np.ndarray:
        return (X - self.x_mean) / self.x_std

    def y(self, y: np.ndarray) -> np.ndarray:
        return (y - self.y_min) / self.y_range


def encode_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Binary labels → ±1 (smallest value → −1); returns (encoded, classes)."""
    classes = np.unique(y)
    if classes.size != 2:
        raise UsageError(f"classification needs exactly two classes, found {classes.size}")
    return np.where(y == classes[1], 1.0, -1.0), classes


def metric_name(task: str, target_scaling: str = "range") -> str:
    if target_scaling == "pm1":
        return "mse100" if task == "regression" else "error"
    if task in ("classification", "multiclass"):
        return "accuracy"
    if target_scaling == "stored":
        return "rmse"
    return "mse" if target_scaling == "standard" else "rmse100"


def score(task: str, y_true: np.ndarray, y_pred: np.ndarray, target_scaling: str = "range",
          y_unit: float = 1.0) -> float:
    """Regression: RMSE × 100 of range-normalised outputs, or MSE of standardised outputs
    (holdout / SALSA), or 100 × MSE of [−1, 1] outputs (fixed / EERF), or the RMSE on the target as
    stored ("stored", published: outputs fitted standardised, ``y_unit`` the training std that
    takes them back). Classification (two or more classes): accuracy in %, or the misclassification
    rate in % (fixed / EERF). Predictions of another size than the test rows are refused (a
    ValueError: the task's error record), not broadcast into a wrong error."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_pred.size != y_true.size:
        raise ValueError(f"predict returned {y_pred.size} value(s) of shape {y_pred.shape} for {y_true.size} test "
                         "rows; it must return one prediction per row")
    y_pred = y_pred.reshape(y_true.shape)
    if target_scaling == "stored" and task == "regression":
        return float(y_unit * np.sqrt(np.mean((y_true - y_pred) ** 2)))
    if target_scaling == "pm1":
        if task == "regression":
            return float(100.0 * np.mean((y_true - y_pred) ** 2))
        return float(100.0 * np.mean(y_true != y_pred))
    if task == "regression" and target_scaling == "standard":
        return float(np.mean((y_true - y_pred) ** 2))
    if task == "regression":
        return float(100.0 * np.sqrt(np.mean((y_true - y_pred) ** 2)))
    return float(100.0 * np.mean(y_true == y_pred))
