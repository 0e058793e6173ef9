"""Datasets: loaders per source kind, checksums, a download cache; ``load(name)`` is the entry point."""

from rfbench.data.loader import Loaded, load

__all__ = ["Loaded", "load"]
