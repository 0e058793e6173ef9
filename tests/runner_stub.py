"""What the ``runner_calls`` fixture (tests/conftest.py) raises in place of a run."""


class StopRun(Exception):
    """Raised by the runner stub: the test has the call it wanted, the command stops there."""
