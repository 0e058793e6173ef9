"""The markup that turns rfbench's HTML pages into the pages of a static site (``rfbench publish``):
every table gets a CSV file beside the page (its rows as the table shows them) and a link to it, and
one small inline script sorts a table when a header is clicked and filters its rows with a text box.
Without the script the tables are plain HTML tables; no URL leaves the site.

:func:`decorate` does both to a page built by :func:`rfbench.reporting.html_markup.document`;
:func:`table_rows` reads a table's header and rows back (the CSV's content, and the tests' check).
The script's self-test runs when a page is opened with ``#selftest``: it clicks a header, checks
the order, types a filter, checks the rows and writes the outcome into ``<pre id="selftest">``
(what ``chromium --headless --dump-dom`` returns).
"""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

from rfbench.reporting.html_markup import attr, esc

SITE_CSS = """
.tools{margin:8px 0 2px;font-size:12px;color:#5b6475}.tools a{margin-right:10px}
.tools input{font-size:12px;padding:1px 6px;width:220px;margin-right:10px}
th.sortable{cursor:pointer;user-select:none}th.sortable:hover{background:#e4e8f0}
th[aria-sort=ascending]::after{content:" \\25B2";font-size:9px}
th[aria-sort=descending]::after{content:" \\25BC";font-size:9px}
header.site{border-bottom:1px solid #d6dae3;padding:4px 0 6px;margin-bottom:6px;font-size:13px}
header.site a{margin-right:14px}
div.tall{max-height:680px;overflow:auto;border-bottom:1px solid #d6dae3;display:inline-block;max-width:100%}
div.tall thead tr:first-child th{position:sticky;top:0;z-index:1}
figure{display:inline-block;vertical-align:top;width:calc(50% - 14px);margin:8px 10px 16px 0}
figure svg{display:block;max-width:100%;height:auto;border:1px solid #e3e6ec}h4{font-size:13px;margin:14px 0 4px}
@media (max-width:1000px){figure{width:100%}}
"""

SCRIPT = r"""
(function(){
"use strict";
function txt(c){return c?(c.textContent||"").replace(/\s+/g," ").trim():"";}
function num(s){var m=s.replace(/\u2212/g,"-").replace(/,/g,"").match(/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?/i);
 return m?parseFloat(m[0]):NaN;}
function rows(t){return t.tBodies.length?Array.prototype.slice.call(t.tBodies[0].rows):[];}
function sortable(t){
 if(!t.tHead||t.tHead.rows.length!==1||!t.tBodies.length)return false;
 return rows(t).every(function(r){return Array.prototype.every.call(r.cells,function(c){return c.colSpan===1;});});}
function cmp(t,k){
 var vals=rows(t).map(function(r){return txt(r.cells[k]);});
 var numeric=vals.some(function(v){return v!=="";})&&vals.every(function(v){return v===""||!isNaN(num(v));});
 return function(x,y){
  if(numeric){var p=x===""?Infinity:num(x),q=y===""?Infinity:num(y);return p<q?-1:p>q?1:0;}
  return x.localeCompare(y,undefined,{numeric:true});};}
function sortBy(t,k){
 var th=t.tHead.rows[0].cells[k],dir=th.getAttribute("aria-sort")==="ascending"?-1:1,c=cmp(t,k),body=t.tBodies[0];
 rows(t).map(function(r,i){return [r,i];}).sort(function(a,b){
  return dir*c(txt(a[0].cells[k]),txt(b[0].cells[k]))||a[1]-b[1];}).forEach(function(p){body.appendChild(p[0]);});
 Array.prototype.forEach.call(t.tHead.rows[0].cells,function(h){h.removeAttribute("aria-sort");});
 th.setAttribute("aria-sort",dir===1?"ascending":"descending");}
function filter(t,q){
 q=q.toLowerCase();var shown=0;
 rows(t).forEach(function(r){var on=!q||r.textContent.toLowerCase().indexOf(q)>=0;r.style.display=on?"":"none";
  if(on)shown++;});
 return shown;}
var tables=Array.prototype.slice.call(document.querySelectorAll("table[data-t]"));
tables.forEach(function(t){
 var tools=document.getElementById("tools-"+t.getAttribute("data-t"));
 if(tools&&t.tBodies.length&&rows(t).length>1){
  var box=document.createElement("input");box.type="search";box.placeholder="filter rows";
  box.setAttribute("aria-label","filter the rows of this table");
  box.addEventListener("input",function(){filter(t,box.value);});tools.insertBefore(box,tools.firstChild);t._box=box;}
 if(sortable(t)){Array.prototype.forEach.call(t.tHead.rows[0].cells,function(h,k){
  h.className+=" sortable";h.title="click to sort";h.addEventListener("click",function(){sortBy(t,k);});});}
});
if(location.hash!=="#selftest")return;
var out={tables:tables.length,sortable:tables.filter(sortable).length,sort:null,filter:null};
try{
 var t=tables.filter(function(x){return sortable(x)&&rows(x).length>=3;})[0];
 if(t){
  var k=-1;for(var j=0;j<t.tHead.rows[0].cells.length&&k<0;j++){
   if(new Set(rows(t).map(function(r){return txt(r.cells[j]);})).size>1)k=j;}
  var sorted=function(k){
   var c=cmp(t,k),before=rows(t).map(function(r){return txt(r.cells[k]);});
   t.tHead.rows[0].cells[k].click();
   var asc=rows(t).map(function(r){return txt(r.cells[k]);});
   t.tHead.rows[0].cells[k].click();
   var desc=rows(t).map(function(r){return txt(r.cells[k]);});
   var ordered=function(v,s){for(var i=1;i<v.length;i++){if(s*c(v[i-1],v[i])>0)return false;}return true;};
   return {column:txt(t.tHead.rows[0].cells[k]),ascending:ordered(asc,1),descending:ordered(desc,-1),
    changed:asc.join("\n")!==desc.join("\n"),same_rows:asc.slice().sort().join("\n")===before.slice().sort().join("\n")};};
  if(k>=0)out.sort=sorted(k);
  for(var j2=0;j2<t.tHead.rows[0].cells.length;j2++){
   var v2=rows(t).map(function(r){return txt(r.cells[j2]);});
   if(new Set(v2).size>1&&v2.every(function(v){return v!==""&&!isNaN(num(v));})){
    out.numeric_sort=sorted(j2);
    var got=rows(t).map(function(r){return num(txt(r.cells[j2]));});
    out.numeric_sort.numbers_descending=got.every(function(x,i){return i===0||got[i-1]>=x;});break;}}
  var q=txt(rows(t)[rows(t).length-1].cells[0]);
  t._box.value=q;t._box.dispatchEvent(new Event("input"));
  var vis=rows(t).filter(function(r){return r.style.display!=="none";});
  out.filter={query:q,total:rows(t).length,shown:vis.length,
   match:vis.length>0&&vis.every(function(r){return r.textContent.toLowerCase().indexOf(q.toLowerCase())>=0;})&&
    rows(t).every(function(r){return r.style.display!=="none"||r.textContent.toLowerCase().indexOf(q.toLowerCase())<0;})};
  t._box.value="";t._box.dispatchEvent(new Event("input"));
  out.filter.cleared=rows(t).every(function(r){return r.style.display!=="none";});
 }
}catch(e){out.error=String(e);}
var pre=document.createElement("pre");pre.id="selftest";pre.textContent=JSON.stringify(out);document.body.appendChild(pre);
})();
"""


class _Tables(HTMLParser):
    """Every table of a page: its header rows and body rows, each cell (text, colspan, rowspan)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self._cell: list[str] | None = None
        self._span = (1, 1)
        self._row: list | None = None
        self._part = "body"

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"head": [], "body": []})
        elif tag == "thead":
            self._part = "head"
        elif tag == "tbody":
            self._part = "body"
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self._span = (int(a.get("colspan") or 1), int(a.get("rowspan") or 1))
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append((re.sub(r"\s+", " ", "".join(self._cell)).strip(), *self._span))
            self._cell = None
        elif tag == "tr" and self._row is not None and self.tables:
            self.tables[-1][self._part].append(self._row)
            self._row = None
        elif tag == "thead":
            self._part = "body"

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _grid(rows: list[list]) -> list[list[str]]:
    """Rows of (text, colspan, rowspan) cells laid out on a grid: a spanned cell's text in its first
    column and row, blanks in the rest."""
    grid: list[list[str]] = []
    taken: dict[tuple[int, int], str] = {}
    for i, row in enumerate(rows):
        out, j = [], 0
        cells = list(row)
        while cells or (i, j) in taken:
            if (i, j) in taken:
                out.append(taken.pop((i, j)))
                j += 1
                continue
            text, colspan, rowspan = cells.pop(0)
            for dj in range(colspan):
                out.append(text if dj == 0 else "")
                for di in range(1, rowspan):
                    taken[(i + di, j + dj)] = ""
            j += colspan
        grid.append(out)
    return grid


def table_rows(table_html: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of one table: the header rows' labels of each column joined top-down (a
    spanned label named once), the body rows as text, spanned cells laid out on the columns."""
    parser = _Tables()
    parser.feed(table_html)
    t = parser.tables[0] if parser.tables else {"head": [], "body": []}
    head = _grid(t["head"])
    width = max([len(r) for r in head + _grid(t["body"])] or [0])
    header = []
    for j in range(width):
        labels = [r[j] for r in head if j < len(r) and r[j]]
        if not labels:      # under a spanned label: that label
            labels = [next((r[jj] for jj in range(j, -1, -1) if jj < len(r) and r[jj]), "") for r in head[:1]]
            labels = [f"{labels[0]} ({j})"] if labels and labels[0] else [f"column {j + 1}"]
        header.append(" ".join(labels))
    body = [r + [""] * (width - len(r)) for r in _grid(t["body"])]
    return header, body


def csv_text(header: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


TABLE = re.compile(r"<table\b.*?</table>", re.S)
#: tables of more rows scroll in a box (about 25 rows high) with their header row kept in view
TALL = 30


def decorate(page: str, stem: str) -> tuple[str, dict[str, str]]:
    """The page with a CSV link before every table (``<stem>.<k>.csv``, k counting from 1), the
    tables marked for the script (a table of more than :data:`TALL` rows in a scrolling box), the
    site's style (figures two abreast on a wide screen) and the script; returns (page, {file name: CSV
    text}) for the caller to write beside the page."""
    files: dict[str, str] = {}

    def one(m: re.Match) -> str:
        k = len(files) + 1
        name = f"{stem}.{k}.csv"
        header, rows = table_rows(m.group(0))
        files[name] = csv_text(header, rows)
        table = f'<table data-t="{k}"' + m.group(0)[len("<table"):]
        if len(rows) > TALL:        # a long table scrolls in a box of its own: the page stays short
            table = f'<div class="tall">{table}</div>'
        return (f'<p class="tools" id="tools-{k}"><a href="{attr(name)}" download>CSV ({len(rows)} rows)</a></p>'
                + table)

    page = TABLE.sub(one, page)
    page = page.replace("</style>", SITE_CSS + "</style>", 1)
    page = page.replace("\n</body>", f"\n<script>{SCRIPT}</script>\n</body>", 1)
    return page, files


def site_header(links: list[tuple[str, str]]) -> str:
    """The bar of links at the top of every page of the site."""
    return '<header class="site">' + "".join(f'<a href="{attr(h)}">{esc(t)}</a>' for t, h in links) + "</header>"
