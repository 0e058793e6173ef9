"""python -m rfbench.cli: the command line."""

from rfbench.cli import main

main()
