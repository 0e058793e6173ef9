"""Datasets: loaders per source kind, checksums, a download cache; ``load(name, registry=registry)`` is
the entry point (``registry``: the one :func:`rfbench.registry.load` builds; there is no default)."""

from rfbench.data.loader import Loaded, load

__all__ = ["Loaded", "load"]
