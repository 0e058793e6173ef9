"""Command line: rfbench run | report | check | reproduce | status | baselines | compare | datasets | methods.

Usage errors and bad input exit with code 2 and one line naming the problem, never a traceback.

Here: the group ``cli`` and ``main``. ``options`` holds the parsers and the shared options; each command
group is a module (``running``: run; ``results``: report, status, check, plot; ``publish``: publish,
baselines; ``reproduce``; ``compare``; ``datasets``; ``methods``), imported here and added to ``cli``.
A command imports what it needs inside itself, so ``rfbench --help`` stays light.
"""

from __future__ import annotations

import sys
import threading

import click

from rfbench.cli.compare import compare_group
from rfbench.cli.datasets import datasets_group
from rfbench.cli.methods import methods_cmd
from rfbench.cli.options import parse_duration  # noqa: F401 - importable from rfbench.cli, as before
from rfbench.cli.publish import baselines_cmd, publish_cmd
from rfbench.cli.reproduce import reproduce_cmd
from rfbench.cli.results import check_cmd, plot_cmd, report_cmd, status_cmd
from rfbench.cli.running import run
from rfbench.errors import UsageError
from rfbench.execution.runconfig import MAX_FEATURES, MAX_TIMEOUT_S  # noqa: F401 - MAX_TIMEOUT_S: the old name


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rfbench")
def cli():
    """Benchmark learned and random feature methods under one nested-CV protocol."""


for _command in (run, report_cmd, status_cmd, check_cmd, reproduce_cmd, plot_cmd, publish_cmd, baselines_cmd,
                 compare_group, datasets_group, methods_cmd):
    cli.add_command(_command)


class Terminated(KeyboardInterrupt):
    """SIGTERM (what a batch scheduler sends before it kills a job), handled as Ctrl-C is: the
    workers are stopped, unfinished tasks' claims released, finished records kept."""


def _terminate(signum, frame):
    raise Terminated


def main(argv=None):
    import signal

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        try:
            cli.main(args=argv, prog_name="rfbench", standalone_mode=False)
        finally:
            if (dask_pool := sys.modules.get("rfbench.execution.dask_pool")) is not None:
                dask_pool.silence_until_exit()
    except UsageError as exc:
        click.echo(f"rfbench: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort as exc:     # click turns KeyboardInterrupt (and so SIGTERM) into Abort
        if isinstance(exc.__cause__, Terminated):
            click.echo("rfbench: terminated (SIGTERM); finished tasks are saved, re-run the same command to resume",
                       err=True)
            sys.exit(143)
        click.echo("rfbench: interrupted; finished tasks are saved, re-run the same command to resume", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"rfbench: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except Terminated:
        click.echo("rfbench: terminated (SIGTERM); finished tasks are saved, re-run the same command to resume",
                   err=True)
        sys.exit(143)
    except KeyboardInterrupt:
        click.echo("rfbench: interrupted; finished tasks are saved, re-run the same command to resume", err=True)
        sys.exit(130)

