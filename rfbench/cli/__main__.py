"""python -m rfbench.cli: the command line."""

from rfbench.cli import main

if __name__ == "__main__":
    main()
