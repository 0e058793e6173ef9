"""Settings: where rfbench finds dataset mirrors, published tables, its download cache, results of
packaged specs and user registries.

Each setting is taken from the first of: the command-line option (where there is one), the
environment variable, the config file, the default.

| key            | environment              | default                                                        |
|----------------|--------------------------|----------------------------------------------------------------|
| data_dirs      | RFBENCH_DATA_DIR         | none (generated and downloaded datasets only)                  |
| published_dir  | RFBENCH_PUBLISHED_DIR    | the copy that ships with the package (rfbench/_data/published) |
| cache_dir      | RFBENCH_CACHE_DIR        | ~/.cache/rfbench                                               |
| results_root   | RFBENCH_RESULTS_ROOT     | ./results (results of the packaged specs: <results_root>/<name>) |
| registry       | RFBENCH_REGISTRY         | none (user registry files that extend the built-in one)        |
| device         | RFBENCH_DEVICE           | cpu (where `run` and `reproduce` compute: cpu, cuda or auto; --device wins) |

``data_dirs`` and ``registry`` hold several paths: a TOML list, or one string of paths separated by
``os.pathsep`` (':' on Linux and macOS), as in the environment; directories are searched in order.

``device`` is a word, not a path: ``cpu``, ``cuda`` or ``auto`` (the GPU when torch sees one, else
the CPU with a note); rfbench.execution.runconfig resolves it.

Config files (TOML, top-level keys above): ``$RFBENCH_CONFIG`` alone when it is set (empty or
``none``: no config file), else ``./rfbench.toml`` and ``$XDG_CONFIG_HOME/rfbench/config.toml``
(default ``~/.config/rfbench/config.toml``), a key in the first overriding the second. A relative
path in a config file is relative to the file's directory.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from rfbench.errors import UsageError

KEYS = ("data_dirs", "published_dir", "cache_dir", "results_root", "registry", "device")
_LISTS = ("data_dirs", "registry")
#: the values of the ``device`` setting (those of --device)
DEVICE_VALUES = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class Config:
    """The settings of the config files (None / empty: not set there)."""
    data_dirs: tuple[Path, ...] = ()
    published_dir: Path | None = None
    cache_dir: Path | None = None
    results_root: Path | None = None
    registry: tuple[Path, ...] = ()
    device: str | None = None
    files: tuple[Path, ...] = field(default=())   # the config files read, first = strongest
    origin: dict = field(default_factory=dict)     # key -> the config file that set it


def _candidates() -> list[str]:
    """The config files that may be read, strongest first (plain strings: this runs often)."""
    explicit = os.environ.get("RFBENCH_CONFIG")
    if explicit is not None:
        if explicit.strip().lower() in ("", "none"):
            return []
        path = os.path.expanduser(explicit)
        if not os.path.isfile(path):
            raise UsageError(f"RFBENCH_CONFIG={explicit} is not a file; point it at a config TOML file, "
                             "or set it to 'none' to read no config file")
        return [path]
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return [os.path.join(os.getcwd(), "rfbench.toml"),
            os.path.join(os.path.expanduser(xdg), "rfbench", "config.toml")]


def _paths(file: Path, key: str, value) -> tuple[Path, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(os.pathsep) if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UsageError(f"{file}: '{key}' must be a path or a list of paths")
    return tuple((file.parent / Path(v).expanduser()) for v in value)


@lru_cache(maxsize=16)
def _read(path: Path, mtime_ns: int) -> dict:
    try:
        raw = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid TOML: {str(exc).splitlines()[0]}") from None
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise UsageError(f"{path}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(KEYS)}")
    out = {}
    for key, value in raw.items():
        if key in _LISTS:
            out[key] = _paths(path, key, value)
        elif key == "device":
            if value not in DEVICE_VALUES:
                raise UsageError(f"{path}: 'device' must be one of {', '.join(DEVICE_VALUES)}, got {value!r}")
            out[key] = value
        elif isinstance(value, str) and value.strip():
            out[key] = path.parent / Path(value).expanduser()
        else:
            raise UsageError(f"{path}: '{key}' must be a path (a non-empty string)")
    return out


def load() -> Config:
    """The merged settings of the config files (read again when a file changes)."""
    stamps = []
    for path in _candidates():
        try:
            st = os.stat(path)
        except OSError:
            continue
        stamps.append((path, st.st_mtime_ns, st.st_size))
    return _merged(tuple(stamps))


@lru_cache(maxsize=16)
def _merged(stamps: tuple) -> Config:
    merged: dict = {}
    origin: dict = {}
    for path, mtime_ns, _ in reversed(stamps):    # weakest first, so the stronger one overrides
        values = _read(Path(path).resolve(), mtime_ns)
        merged.update(values)
        origin.update(dict.fromkeys(values, Path(path)))
    return Config(**merged, files=tuple(Path(p) for p, *_ in stamps), origin=origin)


def setting(env: str, key: str) -> tuple[Path | None, str]:
    """A one-path setting and where it came from: (path, 'ENV' | 'config file PATH' | '')."""
    value = os.environ.get(env, "").strip()
    if value:
        return Path(value).expanduser(), env
    cfg = load()
    found = getattr(cfg, key)
    if found is not None:
        return found, f"{key} in {cfg.origin[key]}"
    return None, ""


def cache_dir() -> Path:
    path, _ = setting("RFBENCH_CACHE_DIR", "cache_dir")
    return path or Path.home() / ".cache" / "rfbench"


def results_root() -> Path:
    """Where the results of the packaged specs go: <results_root>/<spec's results name>."""
    path, _ = setting("RFBENCH_RESULTS_ROOT", "results_root")
    return (path or Path("results")).absolute()



def device_setting() -> tuple[str, str]:
    """The ``device`` setting (when --device is left out) and where it came from: (value, 'RFBENCH_DEVICE' |
    'device in FILE' | '') — "cpu" by default."""
    value = os.environ.get("RFBENCH_DEVICE", "").strip()
    if value:
        if value not in DEVICE_VALUES:
            raise UsageError(f"RFBENCH_DEVICE={value} must be one of {', '.join(DEVICE_VALUES)}")
        return value, "RFBENCH_DEVICE"
    cfg = load()
    if cfg.device is not None:
        return cfg.device, f"device in {cfg.origin['device']}"
    return "cpu", ""


def _process_umask() -> int:
    mask = os.umask(0o022)      # reading the umask sets it: put it back at once
    os.umask(mask)
    return mask


#: the umask when rfbench was imported (read once: reading it means setting it, which is not thread-safe)
UMASK = _process_umask()


def new_file_mode() -> int:
    """The mode a plain ``open()`` would give a new file (0o666 less the umask). Temporary files made
    by ``tempfile.mkstemp`` are 0600 whatever the umask; a file renamed into place from one gets this
    mode first, so that results, sites and caches can be shared as the user's umask allows."""
    return 0o666 & ~UMASK

