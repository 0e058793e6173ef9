"""The option parsers and the options shared by several commands, declared once."""

from __future__ import annotations

import re
from pathlib import Path

import click
from click.core import ParameterSource

from rfbench.errors import UsageError
from rfbench.execution.backends import (
    BACKENDS,  # the names only: a backend's module loads when it runs
)
from rfbench.execution.runconfig import DEFAULT_GPU_SLOTS, check_timeout


class SignificanceLevel(click.ParamType):
    """A significance level: a number strictly between 0 and 1 (NaN, 0, 1 and beyond are refused)."""
    name = "alpha"

    def convert(self, value, param, ctx):
        try:
            level = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number; give a significance level such as 0.05", param, ctx)
        if not 0 < level < 1:          # also false for NaN
            self.fail(f"{value} is not a significance level; give a number strictly between 0 and 1, e.g. 0.05",
                      param, ctx)
        return level


ALPHA = SignificanceLevel()
#: --width: characters per line, 0 for no limit; a bound that no terminal reaches
WIDTH = click.IntRange(0, 100_000)
class Count(click.ParamType):
    """A count of workers, threads or slots: a whole number of at least 1. Refused in one line that names
    where the value came from (the option, or its environment variable: declare the option with
    ``cls=CountOption``) and ``hint``, what to give instead (click's own range message names the
    environment variable even when the value was typed)."""

    name = "integer"

    def __init__(self, hint: str):
        self.hint = hint

    def convert(self, value, param, ctx):
        shown = param.opts[0] if param is not None else "value"
        if param is not None and ctx is not None and ctx.meta.get((SOURCE, param.name)) == ParameterSource.ENVIRONMENT:
            shown = f"{shown} (from ${param.envvar})"
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise UsageError(f"{shown} {value!r} must be a whole number of at least 1")
        try:
            count = value if isinstance(value, int) else int(value.strip(), 10)
        except ValueError:
            raise UsageError(f"{shown} {value!r} is not a whole number; {self.hint}") from None
        if count < 1:
            raise UsageError(f"{shown} {count} must be at least 1; {self.hint}")
        return count


SOURCE = "rfbench.source"     # ctx.meta[(SOURCE, name)]: where an option's value came from


class CountOption(click.Option):
    """An option that records where its value came from (click's ParameterSource) in ctx.meta before
    its type converts it (click 8.2 and later set ctx.get_parameter_source only after converting)."""

    def consume_value(self, ctx, opts):
        value, source = super().consume_value(ctx, opts)
        ctx.meta[(SOURCE, self.name)] = source
        return value, source


JOBS = Count("give the worker processes to run, or leave it out for one per core")
THREADS = Count("give the threads per worker, or leave it out for cores // jobs")
GPU_SLOTS = Count("give the device tasks to hold in flight at once, or leave it out for the default")


def latex_label(ctx, param, value: str | None) -> str | None:
    """A --label as a LaTeX \\label key: letters, digits and ``:._-`` (anything else, e.g. a brace or a
    backslash that would run TeX code, is refused in one line)."""
    if value is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9:._-]{1,200}", value):
        raise click.BadParameter(f"{value!r:.60} is not a LaTeX label: use letters, digits and ':._-' only "
                                 "(e.g. tab:uci)", ctx, param)
    return value


def parse_duration(text: str | None) -> float | None:
    """'90', '90s', '30m', '2h', '1h30m' → seconds."""
    if text is None or text == "":
        return None
    m = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not m or not any(m.groups()):
        raise UsageError(f"--timeout '{text}' is not a duration; use e.g. 90s, 30m, 2h or 1h30m")
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return check_timeout(3600 * h + 60 * mi + s, text)


def int_list(text: str, option: str, low: int, high: int, example: str) -> list[int]:
    """A comma-separated list of integers from ``low`` to ``high`` (--features, --seeds): the one
    parser of such options, refusing in one line that names the option, the text and the bounds."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{option} '{text}' must be comma-separated integers, e.g. {example}") from None
    if not values or not all(low <= v <= high for v in values):
        raise UsageError(f"{option} '{text}' must be integers of at least {low} and at most {high} each, e.g. {example}")
    return values


def parse_int_list(text: str, option: str, at_most: int) -> list[int]:
    """Positive integers, e.g. --features 100,500."""
    return int_list(text, option, 1, at_most, "100,500")


def results_dir_option(text: str, option: str = "--out") -> str:
    """A results directory option as given; an empty one would be the current directory."""
    if not text.strip():
        raise UsageError(f"{option} is empty; name the results directory, e.g. {option} runs/mine")
    return text


def output_file(text: str | None) -> Path | None:
    """--output FILE (report, compare report), or None for stdout. Its directory must exist: a
    mistyped path would otherwise create directories where the user did not look."""
    if text is None:
        return None
    if not text.strip():
        raise UsageError("--output is empty; name a file, or leave the option out to print to stdout")
    path = Path(text)
    if path.is_dir():
        raise UsageError(f"--output {text} is a directory; name a file")
    if path.parent.exists() and not path.parent.is_dir():
        raise UsageError(f"--output {text}: {path.parent} is a file, not a directory; name a file in a directory")
    if not path.parent.is_dir():
        raise UsageError(f"--output {text}: directory {path.parent} does not exist; create it first or name a "
                         "file in an existing directory")
    return path


def output_dir(text: str) -> Path:
    """--output DIR of figures or pages: created if missing, but not its parent (a mistyped path)."""
    if not text.strip():
        raise UsageError("--output is empty; name the directory to write to, e.g. --output plots")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--output {text} is a file, not a directory; name a directory to write to")
    if not path.parent.is_dir():
        raise UsageError(f"--output {text}: directory {path.parent} does not exist; create it first or name a "
                         "directory in an existing one")
    return path


def parse_seeds(text: str | None, seed: int = 0) -> list[int]:
    """--seeds '0,1,2' → [0, 1, 2] (each once, in the order given); without --seeds, [--seed]."""
    if text is None:
        return [seed]
    if seed != 0:
        raise UsageError("give either --seed N or --seeds LIST, not both (--seeds 0,1,2 runs every seed)")
    return list(dict.fromkeys(int_list(text, "--seeds", 0, 2**32 - 1, "0,1,2")))


def name_list(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


#: one more than the highest fold number --folds accepts (protocols have tens of folds, not millions)
MAX_FOLD = 10_000


def parse_folds(text: str | None) -> list[int] | None:
    """'0-2,5' → [0, 1, 2, 5]; None → all folds."""
    if text is None:
        return None
    folds = []
    try:
        for part in (v.strip() for v in text.split(",") if v.strip()):
            lo, _, hi = part.partition("-")
            first, last = int(lo), int(hi or lo)
            if not 0 <= first <= last < MAX_FOLD:
                raise UsageError(f"--folds '{part}' must be fold numbers from 0 to {MAX_FOLD - 1}, low to high, "
                                 "e.g. 0-2,5")
            folds.extend(range(first, last + 1))
    except ValueError:
        raise UsageError(f"--folds '{text}' must be fold numbers or ranges, e.g. 0-2,5") from None
    if not folds:
        raise UsageError(f"--folds '{text}' names no fold; use e.g. 0-2,5")
    return folds


def split_names(text: str | None) -> list[str]:
    return [v.strip() for v in (text or "").split(",") if v.strip()]


def filter_options(command):
    """--methods and --datasets (report, plot, check): show only these cells."""
    command = click.option("--datasets", "dataset_filter", default=None,
                           help="only these datasets, comma-separated (e.g. kinematics,bank)")(command)
    return click.option("--methods", "method_filter", default=None,
                        help="only these methods, comma-separated (e.g. gfc,alc: the GFC paper's Table 1 "
                             "without the variants run beside it)")(command)


def time_option(command):
    """--time wall|cpu: which seconds the time columns and figures show (rfbench.reporting.timing)."""
    return click.option("--time", "time_measure", default="wall", show_default=True, type=click.Choice(["wall", "cpu"]),
                        help="the seconds the time columns and figures show: each task's wall time (the papers' "
                             "measure; a busy machine's is said so in the captions), or the CPU seconds its record "
                             "holds (cpu_s: every thread of the worker; tasks without it, or computed on a GPU, "
                             "are left out of the times)")(command)


def backend_options(command):
    """--backend and --scheduler (run, reproduce)."""
    command = click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
                           help="with --backend dask: run on this dask scheduler's workers (default: start a "
                                "LocalCluster of --jobs workers here); see docs/cluster.md")(command)
    return click.option("--backend", default="local", show_default=True, type=click.Choice(list(BACKENDS)),
                        help="where tasks run: " + "; ".join(f"{name}: {entry.about}"
                                                             for name, entry in BACKENDS.items()))(command)


def worker_options(command):
    """--jobs, --threads and --timeout (run, reproduce)."""
    command = click.option("--timeout", default=None, help="per-task time limit, e.g. 30m (at most 30 days)")(command)
    # the bound declared here refuses a bad value before anything is read; RunConfig keeps its own
    # checks for library callers
    command = click.option("--threads", cls=CountOption, default=None, type=THREADS,
                           help="threads per worker (default: cores // jobs)")(command)
    return click.option("--jobs", cls=CountOption, default=None, type=JOBS, envvar="RFBENCH_JOBS", show_envvar=True,
                        help="parallel worker processes (default: one per core with one thread each, the faster "
                             "placement measured for every built-in method; a run of methods registered with "
                             "placement: threads gets one worker with every core; with --threads, "
                             "cores // threads)")(command)


def device_options(command):
    """--device, --gpu-slots and --gpu-beside (run, reproduce)."""
    command = click.option("--gpu-beside", is_flag=True,
                           help="with the GPU: the device tasks run on --gpu-slots workers of their own beside the "
                                "--jobs CPU workers, instead of holding one of them (a device task's worker mostly "
                                "waits on the GPU)")(command)
    command = click.option("--gpu-slots", cls=CountOption, default=None, type=GPU_SLOTS,
                           help=f"with the GPU: at most this many device tasks at once, each worker that runs one "
                                f"capped to 0.9 / slots of its memory; the other workers run CPU tasks meanwhile "
                                f"(default {DEFAULT_GPU_SLOTS})")(command)
    return click.option("--device", default=None, type=click.Choice(["cpu", "cuda", "auto"]),
                        help="where the methods that can use a GPU compute: cpu (the NumPy path), cuda (refused "
                             "without torch or a GPU: pip install torch, docs/device.md) or auto (the GPU when there is "
                             "one); default: the device setting ($RFBENCH_DEVICE, config file), else cpu; the "
                             "other methods run on the CPU")(command)



REGISTRY_HELP = ("a user registry (YAML with methods:/datasets: sections) that extends the built-in one; "
                 "repeatable (also $RFBENCH_REGISTRY)")
DATA_DIR_HELP = "dataset mirror directory (default: $RFBENCH_DATA_DIR)"


def registry_option(help: str = REGISTRY_HELP):
    """--registry FILE (repeatable), the user registries: parameter ``registry_files``. ``help``: the
    command's own words where they differ (what the registry is for there)."""
    return click.option("--registry", "registry_files", multiple=True, metavar="FILE", help=help)


def data_dir_option(help: str | None = DATA_DIR_HELP):
    """--data-dir, the dataset mirror directory: parameter ``data_dir`` (None: $RFBENCH_DATA_DIR)."""
    return click.option("--data-dir", default=None, help=help)


def quiet_option(command):
    """--quiet of the commands that draw a progress bar (run, reproduce, compare run)."""
    return click.option("--quiet", is_flag=True, help="no progress bar")(command)
