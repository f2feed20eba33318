"""The report as one document in two renderings: markdown and a self-contained HTML page.

`Page` collects the report section by section into both at once: each ``section`` gets an
anchor and a line in the table of contents, tables render with numbers right-aligned,
zebra rows and verdicts coloured (`VERDICT_CLASSES`), and the page carries its stylesheet
inline (`STYLE`) so it reads the same opened from disk, mailed, or shown by MLflow's
artifact view. Rows a table measured nothing for ("not run ...") are not listed one by
one on the page: `collapse_unrun` keeps the measured rows and names the others in one line
(report.md keeps every row, so two runs' files diff row for row).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from stages.artifacts.evaluate import NOT_RUN
from stages.common.render import fmt, markdown
from stages.report.tables import FLAG_MARK
from stages.report.verdicts import DEGENERATE, NO_TASK, NOT_MEASURABLE, NOT_SHOWN, SHOWN, TOO_FEW

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #1f2328;
       max-width: 1200px; margin: 2em auto; padding: 0 1.5em; line-height: 1.5; font-size: 15px; }
h1 { font-size: 1.8em; border-bottom: 2px solid #d0d7de; padding-bottom: .3em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #d8dee4; padding-bottom: .2em; }
a { color: #0969da; }
table { border-collapse: collapse; margin: .8em 0; font-size: 13.5px; display: block; max-width: 100%; overflow-x: auto; }
th, td { padding: 4px 10px; border-bottom: 1px solid #d8dee4; vertical-align: top; }
th { background: #f0f3f6; text-align: left; position: sticky; top: 0; }
tr:nth-child(even) td { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.unrun { color: #8c959f; }
.verdict { font-weight: 600; padding: 1px 6px; border-radius: 4px; white-space: nowrap; }
.v-shown { background: #dafbe1; color: #116329; }
.v-not-shown { background: #fff1e5; color: #953800; }
.v-degenerate { background: #ffebe9; color: #a40e26; }
.v-not-measurable { background: #eaeef2; color: #57606a; }
.v-too-few { background: #fff8c5; color: #7d4e00; }
.flag { color: #a40e26; font-weight: 600; }
.meta, .context { color: #57606a; font-size: 13.5px; }
.header { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: .6em 1em; }
.header td { border: none; padding: 1px 12px 1px 0; background: none !important; }
.unrun-line { color: #57606a; font-style: italic; }
nav.toc { columns: 2; font-size: 14px; }
nav.toc ol { margin: .3em 0; }
figure { margin: 1.2em 0; }
figure img { max-width: 100%; border: 1px solid #d8dee4; }
figcaption { color: #57606a; font-size: 13.5px; }
"""

# a verdict (`stages.report.findings`) -> its CSS class
VERDICT_CLASSES = {SHOWN: "v-shown", NOT_SHOWN: "v-not-shown", DEGENERATE: "v-degenerate",
                   NOT_MEASURABLE: "v-not-measurable", NO_TASK: "v-not-measurable", TOO_FEW: "v-too-few"}
# a measured cell as `stages.report.tables.measured_cell` writes it: a number first
_NUMBER = re.compile(r"^-?\d[\d.,]*(e[+-]?\d+)?\b|^-?(inf|nan)\b")


def anchor(text: str) -> str:
    """An id for ``text`` (lower case, words joined by '-')."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "section"


def is_unrun(text: str) -> bool:
    """Whether a measured cell says no stage of this run measured it (`NOT_RUN`, "not run at ...")."""
    return text == NOT_RUN or text.startswith("not run")


def collapse_unrun(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[list[Sequence[Any]], list[str]]:
    """The rows with a measured cell, and the labels (first cell) of the rows whose every
    measured cell (a column whose header ends in "measured") is unrun."""
    measured = [i for i, h in enumerate(headers) if h.endswith("measured")]
    if not measured:
        return list(rows), []
    kept, unrun = [], []
    for row in rows:
        if all(is_unrun(fmt(row[i])) for i in measured):
            unrun.append(fmt(row[0]))
        else:
            kept.append(row)
    return kept, unrun


def unrun_line(unrun: Sequence[str], total: int) -> str:
    """The one line standing for a table's unrun rows."""
    return (f"{len(unrun)} of {total} rows not run in this profile (no stage of this run measured them): "
            + ", ".join(unrun) + ".")


def _cell(value: Any) -> str:
    text = fmt(value)
    if text in VERDICT_CLASSES:
        return f"<td><span class='verdict {VERDICT_CLASSES[text]}'>{html.escape(text)}</span></td>"
    body = html.escape(text)
    if FLAG_MARK in text:
        body = body.replace(html.escape(FLAG_MARK), f"<span class='flag'>{html.escape(FLAG_MARK)}</span>")
    if is_unrun(text) or text == "not in paper":
        return f"<td class='unrun'>{body}</td>"
    if isinstance(value, int | float) or _NUMBER.match(text):
        return f"<td class='num'>{body}</td>"
    return f"<td>{body}</td>"


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A styled table: numbers right-aligned, verdicts coloured, flags marked."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Page:
    """The report under construction, as markdown lines and HTML parts, with its table of contents."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.md: list[str] = [f"# {title}", ""]
        self.top: list[str] = []  # HTML before the table of contents (the run header, the legend)
        self.body: list[str] = []
        self.toc: list[tuple[str, str]] = []  # (anchor, heading)

    def intro(self, md: Sequence[str], page: str) -> None:
        """Text before the first section (shown above the table of contents)."""
        self.md += [*md, ""]
        self.top.append(page)

    def section(self, heading: str) -> None:
        taken = {a for a, _ in self.toc}
        base = anchor(heading)
        name, i = base, 2
        while name in taken:
            name, i = f"{base}-{i}", i + 1
        self.toc.append((name, heading))
        self.md += [f"## {heading}", ""]
        self.body.append(f"<h2 id='{name}'>{html.escape(heading)}</h2>")

    def text(self, md: str, page: str | None = None) -> None:
        """A paragraph: ``md`` in markdown, ``page`` (escaped ``md`` when None) in HTML."""
        self.md += [md, ""]
        self.body.append(page if page is not None else f"<p>{html.escape(md)}</p>")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], collapse: bool = False) -> None:
        """A table; ``collapse``: in the HTML page its unrun rows become one line (`collapse_unrun`).
        The markdown keeps every row: two runs' report.md files diff row for row."""
        self.md.append(markdown(headers, rows))
        kept, unrun = collapse_unrun(headers, rows) if collapse else (list(rows), [])
        if kept:
            self.body.append(html_table(headers, kept))
        if unrun:
            self.body.append(f"<p class='unrun-line'>{html.escape(unrun_line(unrun, len(rows)))}</p>")

    def raw(self, md: Sequence[str], page: str) -> None:
        self.md += list(md)
        self.body.append(page)

    def markdown(self) -> str:
        return "\n".join(self.md).rstrip("\n") + "\n"

    def html(self) -> str:
        toc = "".join(f"<li><a href='#{a}'>{html.escape(h)}</a></li>" for a, h in self.toc)
        return "\n".join([
            "<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{html.escape(self.title)}</title><style>{STYLE}</style></head><body>",
            f"<h1>{html.escape(self.title)}</h1>", *self.top,
            f"<nav class='toc'><b>Contents</b><ol>{toc}</ol></nav>" if toc else "",
            *self.body, "</body></html>"])
