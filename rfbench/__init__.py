"""rfbench: reproduce and extend the result tables of four papers on learned and random features."""

__version__ = "0.1.0"
