"""nox sessions: tests, lint, demo, check-ci."""

import nox

nox.options.sessions = ["lint", "tests"]
DATA = "../shared/datasets"


@nox.session
def tests(session):
    session.install("-e", ".[test]")
    session.env.setdefault("RFBENCH_DATA_DIR", DATA)
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session
def lint(session):
    session.install("ruff")
    session.run("ruff", "check", "rfbench", "tests", "bench", "noxfile.py")


@nox.session
def demo(session):
    """The README's main job on the embedded synthetic suite."""
    session.install("-e", ".")
    session.run("rfbench", "run", "--suite", "synthetic", "--methods", "rff-gauss,rff-laplace,rff-cauchy,lgbm-quick",
                "--features", "100", "--outer-folds", "5", "--max-samples", "4000", "--out", "runs/demo")


@nox.session(name="check-ci")
def check_ci(session):
    """Exact regression of every spec's fast ci configuration against its reference (as in CI)."""
    session.install("-e", ".")
    session.env.setdefault("RFBENCH_DATA_DIR", DATA)
    session.run("bash", "bench/ci-check.sh", external=True)
