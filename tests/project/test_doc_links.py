"""Every relative link of README.md and docs/*.md names a file of the checkout and, with #anchor, a
heading of that file (GitHub's anchors), so that moving a section cannot leave a link behind."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code spans (links there are not links)."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a markdown file: lower case, punctuation but - and _ dropped,
    spaces as -, a repeated one suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(page: Path) -> list[str]:
    return [t for t in LINK.findall(prose(page.read_text())) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_the_pages_have_links():
    assert len(PAGES) > 5 and sum(len(links(p)) for p in PAGES) > 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    bad = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not bad, f"{page.relative_to(ROOT)}: " + "; ".join(bad)


def test_anchor_slugs():
    assert "compare-your-method-with-the-baselines" in anchors(ROOT / "README.md")
    assert "quick-start-two-commands" in anchors(ROOT / "README.md")


def test_readme_keeps_the_two_commands_that_ci_runs():
    """The README's two set-up commands: the main job on the embedded default suite, and the tests,
    which .ci/run runs as written."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    assert any(b.startswith("pip install -e . && rfbench run --suite synthetic ") for b in blocks)
    test = "pip install -e '.[test]' && python -m pytest -q"
    assert f"```bash\n{test}\n```" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[test]'" in ci and '"$venv/bin/python" -m pytest -q)' in ci


def test_every_benchmark_script_and_single_result_file_is_listed():
    """bench/README.md lists every script of bench/perf and bench/analysis, and results/README.md every
    single results file, so that a number in the docs can be traced to the script that measures it."""
    bench = (ROOT / "bench" / "README.md").read_text()
    scripts = [f"{p.parent.name}/{p.name}" for d in ("perf", "analysis")
               for p in sorted((ROOT / "bench" / d).glob("*.py")) if not p.name.startswith("_")]
    assert scripts and [s for s in scripts if f"`{s}`" not in bench] == []
    results = (ROOT / "results" / "README.md").read_text()
    files = [p.name for p in sorted((ROOT / "results").iterdir()) if p.is_file() and p.name != "README.md"]
    assert files and [f for f in files if f"`{f}`" not in results] == []
