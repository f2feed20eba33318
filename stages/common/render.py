"""The one table-rendering module: markdown, HTML and CSV text from lists of rows, used by
the evaluation contracts (`stages.artifacts.evaluate`) and the report."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from typing import Any


def fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def markdown(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return fmt(v).replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table border='1' cellpadding='3'><tr>{head}</tr>{body}</table>"


def section(caption: str, intro: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]
            ) -> tuple[list[str], list[str]]:
    """A captioned table with an introductory paragraph, as (markdown lines, HTML parts)."""
    return ([f"## {caption}", "", intro, "", markdown(headers, rows)],
            [f"<h2>{html.escape(caption)}</h2>", f"<p>{html.escape(intro)}</p>", html_table(headers, rows)])


def csv_text(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(headers)
    writer.writerows([[fmt(v) if not isinstance(v, float) else repr(v) for v in row] for row in rows])
    return buf.getvalue()
