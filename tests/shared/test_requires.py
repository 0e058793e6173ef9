"""A method that needs an optional package declares it in its registry entry (``requires: {package,
extra}``, parsed into ``Method.requires``): where the package is not importable the method is refused
in one line naming the method, the package and the extra, before its module is imported; a run of
several methods skips it with one notice, a run of it alone exits 2 with the line. The absence is
simulated by patching ``importlib.util.find_spec``."""

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from rfbench import registry
from rfbench.cli import main
from rfbench.errors import UsageError

SVGP_LINE = ("method 'svgp' needs the package 'gpytorch', which is not installed here "
             "(pip install gpytorch; in rfbench's checkout: pip install -e '.[gp]')")


@pytest.fixture
def no_gpytorch(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name.partition(".")[0] == "gpytorch" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_the_optional_methods_declare_their_package_and_extra():
    methods = registry.load().methods
    assert methods["xrfm"].requires == {"package": "xrfm", "extra": "xrfm"}
    assert methods["svgp"].requires == {"package": "gpytorch", "extra": "gp"}
    assert methods["svgp"].estimators == {"regression": "rfbench.methods.svgp:SVGPRegressor"}
    assert methods["xrfm"].estimators["regression"] == "rfbench.methods.xrfm:XRFMRegressor"
    assert methods["rff-gauss"].requires == {} and methods["rff-gauss"].missing() is None


def test_a_method_whose_package_is_missing_is_refused_in_one_line(no_gpytorch):
    svgp = registry.load().methods["svgp"]
    assert svgp.missing() == SVGP_LINE
    for call in (lambda: svgp.estimator_class("regression"), svgp.check):
        with pytest.raises(UsageError) as exc:
            call()
        assert str(exc.value) == SVGP_LINE


def test_without_an_extra_the_line_names_the_package():
    m = registry.Method("mine", {"regression": "x.y:Z"}, requires={"package": "no_such_package_here"})
    assert m.missing() == ("method 'mine' needs the package 'no_such_package_here', which is not installed "
                           "here (pip install no_such_package_here)")


@pytest.mark.parametrize("bad", [{"extra": "gp"}, {"package": "a b"}, {"package": "x", "other": "y"},
                                 "gpytorch", {"package": 3}])
def test_a_malformed_requires_is_one_line(bad):
    with pytest.raises(UsageError, match="field 'requires' must be"):
        registry._parse_method(Path("methods.yaml"), "m", {"estimator": "a.b:C", "requires": bad})


RUN = ["--datasets", "breiman-generated", "--features", "5", "--outer-folds", "2", "--inner-folds", "2", "--quiet"]


def test_a_run_of_only_missing_methods_exits_2_with_the_line(no_gpytorch, tmp_path, capsys):
    from cli_errors import one_line_error

    line = one_line_error(capsys, ["run", "--methods", "svgp", *RUN, "--out", str(tmp_path / "o")], SVGP_LINE)
    assert line == "rfbench: error: " + SVGP_LINE
    assert not (tmp_path / "o").exists()


def test_a_run_of_several_methods_skips_the_missing_one_with_one_notice(no_gpytorch, tmp_path, capsys):
    out = tmp_path / "o"
    try:
        main(["run", "--methods", "svgp,rff-gauss", *RUN, "--out", str(out)])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err
    err = capsys.readouterr().err
    notices = [line for line in err.splitlines() if "svgp" in line]
    assert notices == ["warning: skipped: " + SVGP_LINE], err
    df = pd.read_csv(out / "results.csv")
    assert set(df["method"]) == {"rff-gauss"} and set(df["status"]) == {"done"}


def test_a_dry_run_skips_the_missing_method_too(no_gpytorch, tmp_path, capsys):
    main(["run", "--methods", "svgp,rff-gauss", *RUN, "--out", str(tmp_path / "o"), "--dry-run"])
    captured = capsys.readouterr()
    assert [line for line in captured.err.splitlines() if "svgp" in line] == ["warning: skipped: " + SVGP_LINE]
    assert "rff-gauss" in captured.out and "svgp" not in captured.out


def test_a_spec_run_says_a_missing_method_once_for_all_its_groups(no_gpytorch, capsys):
    from rfbench.experiments.reproduce import installed_groups

    reg = registry.load()
    groups = [(["uci-housing", "uci-yacht"], ["svgp", "rff-gauss"]), (["uci-protein"], ["svgp"])]
    assert installed_groups(groups, reg) == [(["uci-housing", "uci-yacht"], ["rff-gauss"])]
    assert capsys.readouterr().err.splitlines() == ["warning: skipped: " + SVGP_LINE]
    with pytest.raises(UsageError) as exc:
        installed_groups([(["uci-protein"], ["svgp"])], reg)
    assert str(exc.value) == SVGP_LINE
