"""What the tests ask of a refused command line: one line on stderr, exit code 2."""

import pytest

from rfbench.cli import main


def one_line_error(capsys, argv, message):
    """Run the CLI on ``argv``; assert it exits 2 with one stderr line naming ``message``; return it."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and err[0].startswith("rfbench: error: "), err
    assert message in err[0], err[0]
    return err[0]
