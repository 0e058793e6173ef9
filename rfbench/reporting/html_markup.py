"""HTML building blocks of rfbench's pages: escaping (:func:`esc`, :func:`attr`), tables, the page
wrapper with its inline CSS, and PNG figures as data URIs. Used by rfbench.reporting.report (the report as an
HTML fragment) and rfbench.experiments.html_page (whole pages); every text is escaped, only :class:`Markup`
built by rfbench passes through as it is.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1500px;
 padding:16px 28px 48px;color:#1d2330;line-height:1.45;font-size:14px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d6dae3;
 padding-bottom:3px}h3{font-size:14px;margin:18px 0 6px}
nav a{margin-right:14px}a{color:#1f5fbf}
.sub{color:#5b6475;margin:0 0 10px}
.banner{background:#fff4d6;border:1px solid #e8c66a;padding:8px 12px;border-radius:4px;margin:10px 0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 10px}
th,td{padding:3px 8px;border-bottom:1px solid #e3e6ec;text-align:right;white-space:nowrap}
th{background:#f2f4f8;font-weight:600;border-bottom:1px solid #c9ced8}
td.l,th.l{text-align:left}
td.w{white-space:normal;min-width:320px;text-align:left}
thead th{text-align:center}
td.best{background:#e2f2e2}
td.g,th.g{border-left:1px solid #d6dae3}
.partial{color:#a15c00;font-size:11px}
tr.screen td{background:#fff8e6}
tr.pass td.status{color:#176b2c;font-weight:600}tr.fail td.status{color:#b3261e;font-weight:600}
tr.partial td.status,tr.missing td.status{color:#7a6400}
tr.variant td{color:#6b7280}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;margin-right:6px;font-size:12.5px}
.b-pass{background:#dcefdc;color:#176b2c}.b-fail{background:#f6dcda;color:#b3261e}
.b-other{background:#eceef2;color:#3c4350}
figure{margin:10px 0 22px}figure img{max-width:100%;border:1px solid #e3e6ec}
figcaption{color:#5b6475;font-size:12.5px}
pre{background:#f6f7f9;border:1px solid #e3e6ec;padding:10px;overflow-x:auto;font-size:12px}
p.note{color:#5b6475;font-size:12.5px}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px}dt{font-weight:600}dd{margin:0}
"""


def esc(text) -> str:
    """Text as the content of an element (& < > escaped)."""
    return html.escape(str(text), quote=False)


def attr(text) -> str:
    """Text as an attribute value in double quotes (quotes escaped too)."""
    return html.escape(str(text), quote=True)


@dataclass(frozen=True)
class Markup:
    """A fragment of trusted HTML built here, passed through :func:`cell` unescaped."""
    html: str


def cell(value, classes: str = "") -> str:
    body = value.html if isinstance(value, Markup) else esc(value)
    return f'<td class="{classes}">{body}</td>' if classes else f"<td>{body}</td>"


def simple_table(header: list, rows: list[list], left: int = 1, row_classes: list[str] | None = None,
                 column_classes: dict[int, str] | None = None) -> str:
    """A table: the first ``left`` columns left-aligned (names), the rest right-aligned (numbers);
    ``row_classes`` one class per row, ``column_classes`` {column index: class}."""
    head = "".join(f'<th class="l">{esc(h)}</th>' if i < left else f"<th>{esc(h)}</th>" for i, h in enumerate(header))
    column_classes = column_classes or {}
    body = []
    for j, row in enumerate(rows):
        cls = f' class="{row_classes[j]}"' if row_classes and row_classes[j] else ""
        body.append(f"<tr{cls}>" + "".join(cell(v, " ".join(filter(None, ["l" if i < left else "",
                                                                            column_classes.get(i, "")])))
                                           for i, v in enumerate(row)) + "</tr>")
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>' + "".join(body)
            + "</tbody></table></div>")


def document(title: str, fragments: list[str]) -> str:
    """The page: doctype, UTF-8, the inline style, the fragments in order."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(fragments) + "\n</body></html>\n")


def png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def figure_png(fig, dpi: int = 110) -> bytes:
    """A matplotlib figure (made by rfbench.reporting.plot, on its Agg backend) as PNG bytes, closed afterwards."""
    from matplotlib import pyplot

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.15)
    pyplot.close(fig)
    return buf.getvalue()


def img(data: bytes, caption: str) -> str:
    return (f'<figure><img alt="{attr(caption)}" src="{png_uri(data)}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>")
