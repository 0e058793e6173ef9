"""The output formats, named once: what ``rfbench report`` and ``rfbench compare report`` write a table
as (the module of that name in rfbench.reporting.render renders each), and what ``rfbench plot`` and
``compare plot`` draw a figure as. A module of names only, so that the command line declares its
choices without importing the reporting layer."""

#: a results table: plain text, GitHub Markdown, a LaTeX table, tidy CSV, an HTML page, the model as JSON
TABLE_FORMATS = ("text", "markdown", "latex", "csv", "html", "json")

#: a figure file
FIGURE_FORMATS = ("png", "pdf")
