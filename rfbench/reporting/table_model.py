"""The report as a value: what :func:`rfbench.reporting.report.table_model` builds from the results
and every renderer (:mod:`rfbench.reporting.render`, one module per format) reads. Nothing here
computes a statistic or writes a format: the cells carry their numbers and marks, the model its
captions, notes and side tables, so that a format is only a way to lay them out, and a caller
(``rfbench compare report``) adds what it has to say to the model before any format is chosen.
The gp layout's model (:class:`GPReport`, built by :mod:`rfbench.reporting.gp_table`) is here too, a
value of its own that the same format modules render (their ``render_gp``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rfbench.reporting.timing import WALL, TimeMeasure

#: the ``protocol`` of a Wilcoxon row run on complete cells (the others are screens on common folds)
FULL_PROTOCOL = "full protocol"


@dataclass(frozen=True)
class ResultCell:
    """One (dataset, n, method) result: its numbers and its marks."""
    mean: float                     # over every (seed, fold) error of the cell
    std: float                      # spread across folds: the std over one seed's folds, mean over seeds
    walltime: float                 # mean seconds per outer fold
    folds: int                      # (seed, fold) errors finished
    expected: int | None            # folds of a complete cell under its protocol × seeds (None: unknown)
    seeds: int
    seed_std: float | None          # spread across seeds: the std of the per-seed means (None: one seed)
    unit: str                       # what std is across ("folds", or "splits" under the splits protocol)
    bold: bool                      # mark: significantly better than every other method at its dataset and n
    partial: bool                   # mark: fewer folds finished than the protocol has ([k/K])

    @property
    def std_measured(self) -> bool:
        """Some seed has two folds or more: a spread was measured (else it is unknown, not zero)."""
        return self.folds > self.seeds


@dataclass(frozen=True)
class Row:
    """A dataset row with its shape: m rows, d inputs (None: unknown)."""
    dataset: str
    m: int | None
    d: int | None


@dataclass(frozen=True)
class TableModel:
    """Everything a format shows of one report."""
    rows: tuple[Row, ...]                        # datasets, in the registry's order
    ns: tuple[int, ...]                          # feature budgets, ascending
    methods: tuple[str, ...]                     # registered names, in their first appearance in the results
    cells: Mapping[tuple[str, int, str], ResultCell]    # (dataset, n, method); a missing key is an empty cell
    names: Mapping[str, str]                     # display names of methods (registered name when absent)
    score: str                                   # what the numbers are: "error" or "accuracy"
    caption: str                                 # what the numbers are over, the [k/K] mark, fitted-by-sign methods
    screen: str | None                           # the whole report is a screen on some folds: says which
    bold_rule: str                               # what bold means and which t-test decides it
    test: str                                    # that t-test: "welch" or "paired"
    alpha: float
    seeds: int                                   # the most seeds a cell pools
    task_unit: str                               # what one task is run on: "fold", "split"
    wilcoxon: tuple[dict, ...]                   # one row per method pair and n (columns as keys)
    too_few: str | None                          # said instead of the Wilcoxon rows when no pair can reject
    timing: tuple[dict, ...]                     # median seconds per fold and stage (methods by display name)
    # what a caller says about the table as a whole (``compare``: what was compared, on which folds)
    notes: tuple[str, ...] = ()
    # the notes a caption repeats where the notes stand outside the table (LaTeX: comments)
    caption_notes: str | None = None
    # per-row columns a caller adds: column → dataset → value (``compare``: the folds compared)
    dataset_columns: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    # lines said after everything in the formats read as prose (``rfbench report``: each run's wall time)
    footer: tuple[str, ...] = ()
    # which seconds the cells' ``walltime`` holds (``--time cpu``: the CPU seconds) and their header
    time: TimeMeasure = WALL

    def display(self, method: str) -> str:
        return self.names.get(method, method)

    def methods_at(self, n: int) -> list[str]:
        """The methods with at least one cell at n (a panel of one n leaves out the others)."""
        return [m for m in self.methods if any((r.dataset, n, m) in self.cells for r in self.rows)]

    def with_notes(self, notes, caption_notes: str | None = None,
                   dataset_columns: Mapping[str, Mapping[str, object]] | None = None) -> TableModel:
        """The model with a caller's notes (and caption notes, columns) added."""
        return replace(self, notes=self.notes + tuple(notes), caption_notes=caption_notes,
                       dataset_columns={**self.dataset_columns, **(dataset_columns or {})})


# -- the gp layout's model (rfbench.reporting.gp_table builds it; each format module's render_gp reads it) ----------

@dataclass(frozen=True)
class GPCell:
    """One (dataset, method) cell of a gp table at its n: its numbers and its marks."""
    mean: float
    std: float | None          # over the splits (None: fewer than two)
    splits: int                # (seed, split) errors finished
    expected: int | None       # of a complete cell (None: unknown)
    complete: bool
    bold: bool = False
    rank: float | None = None  # on its dataset, among the methods at n (None: the dataset is not ranked)


@dataclass(frozen=True)
class GPRow:
    """A dataset row of a gp table."""
    dataset: str
    label: str                 # the paper's name of the dataset (registry paper:), else its name
    m: object
    d: object
    group: str
    decimals: int = 2          # of every number in the row

    @property
    def title(self) -> str:
        return f"{self.label} ({self.m}, {self.d})"


@dataclass(frozen=True)
class GPTable:
    """The gp table at one feature budget n."""
    n: int
    methods: tuple[str, ...]
    rows: tuple[GPRow, ...]
    cells: Mapping[tuple[str, str], GPCell]      # (dataset, method); a missing key is an empty cell
    avg_rank: Mapping[str, float]                # method → average rank (the methods ranked)
    ranked: tuple[str, ...]                      # the datasets ranked
    rank_screen: str | None = None
    #: method → the datasets where its cell is complete, for the methods left out of the ranking
    #: (plot.ranking_results: run where another is not, e.g. gp-sod above gp's N rows)
    rank_left_out: Mapping[str, int] = field(default_factory=dict)

    def groups(self) -> list[tuple[str, list[GPRow]]]:
        """The rows by size group, the groups in the order of their first row."""
        out: dict[str, list[GPRow]] = {}
        for row in self.rows:
            out.setdefault(row.group, []).append(row)
        return list(out.items())


@dataclass(frozen=True)
class GPReport:
    """Everything a format shows of one gp-layout report: one table per n, the caption and the lines
    that say what bold and the ranks are."""
    tables: tuple[GPTable, ...]
    methods: tuple[str, ...]
    names: Mapping[str, str]                     # display names of methods (registered name when absent)
    caption: str
    bold_rule: str
    rank_rule: str
    test: str
    alpha: float
    higher_is_better: bool
    notes: tuple[str, ...] = ()
    footer: tuple[str, ...] = ()                 # lines said after everything in text and Markdown

    def display(self, method: str) -> str:
        return self.names.get(method, method)
