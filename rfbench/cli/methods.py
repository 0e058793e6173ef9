"""rfbench methods: the registered methods."""

from __future__ import annotations

import click

from rfbench.cli.options import WIDTH, registry_option
from rfbench.errors import UsageError


@click.command("methods")
@registry_option()
@click.option("--width", type=WIDTH, default=None,
              help="characters per line (default: the terminal's width; no limit when not a terminal); 0: no limit, "
                   "with each method's paper and whole description")
def methods_cmd(registry_files, width):
    """List the registered methods, one line each."""
    import textwrap

    from tabulate import tabulate

    from rfbench import registry

    reg = registry.load(registry_files)
    methods = list(reg.methods.values())
    gfc = registry.gfc_note(None, reg)          # which GFC row is which, whatever the width
    from rfbench.reporting.render.common import terminal_width

    width = terminal_width() if width is None else width
    if width == 0:            # --width 0, a file or a pipe: whole lines
        rows = [[m.name, ", ".join(sorted(m.estimators)), m.paper, m.description] for m in methods]
        click.echo(tabulate(rows, headers=["name", "native tasks", "paper", "description"]))
        if gfc:
            click.echo("\n" + gfc)
        return
    if width < 40:
        raise UsageError(f"--width {width} is too narrow for the list; give 40 or more, or 0 for no limit")
    short = {"regression": "reg", "classification": "clf", "multiclass": "multi"}
    rows = [[m.name, ",".join(short.get(t, t) for t in sorted(m.estimators)), m.description] for m in methods]
    name_w, task_w = (max(len(r[i]) for r in [["name", "tasks"], *rows]) for i in (0, 1))
    room = width - name_w - task_w - 4              # two spaces between columns

    def fit(text: str) -> str:
        """The text, cut at a word before ``room`` with an ellipsis when longer."""
        text = " ".join(text.split())
        if len(text) <= room:
            return text
        cut = text[:room - 1].rsplit(" ", 1)[0] if " " in text[:room - 1] else text[:room - 1]
        return cut.rstrip(" ,;:(") + "…"

    lines = [f"{'name':<{name_w}}  {'tasks':<{task_w}}  summary", f"{'-' * name_w}  {'-' * task_w}  {'-' * room}"]
    lines += [f"{n:<{name_w}}  {t:<{task_w}}  {fit(d)}".rstrip() for n, t, d in rows]
    click.echo("\n".join(lines))
    click.echo(textwrap.fill("tasks: reg = regression, clf = classification, multi = multiclass; each method's "
                             "paper and whole description: rfbench methods --width 0", width))
    if gfc:
        # continuation lines indented: none may start with a method's name, as the table's rows do
        click.echo(textwrap.fill(gfc, width, break_on_hyphens=False, subsequent_indent="  "))


