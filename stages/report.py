"""Stage ``report``: render the results of upstream stages as markdown and HTML.

Pure function of its inputs: it reads the upstream artifacts (their ``stats.json`` and
manifests), never MLflow, so its cache key covers everything it shows. Each table says
which stage and cache key produced it.
"""

from __future__ import annotations

import html
from typing import Any

from stages.framework.stage import Artifact, Stage, StageContext


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def corpus_table(art: Artifact) -> tuple[str, list[tuple[str, str]]]:
    import json

    stats = json.loads(art.file("stats.json").read_text())
    rows = [(k, _fmt(v)) for k, v in sorted(stats.items()) if k not in ("top_words", "source")]
    top = ", ".join(f"{w} ({c})" for w, c in stats.get("top_words", [])[:10])
    rows.append(("top words", top))
    title = f"Corpus statistics: {stats['source']} (stage corpus_stats, key {art.key})"
    return title, rows


def to_markdown(title: str, tables: list[tuple[str, list[tuple[str, str]]]]) -> str:
    out = [f"# {title}", ""]
    for caption, rows in tables:
        out += [f"## {caption}", "", "| quantity | value |", "|---|---|"]
        out += [f"| {k} | {v} |" for k, v in rows]
        out.append("")
    return "\n".join(out)


def to_html(title: str, tables: list[tuple[str, list[tuple[str, str]]]]) -> str:
    parts = [f"<html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"]
    parts.append(f"<h1>{html.escape(title)}</h1>")
    for caption, rows in tables:
        parts.append(f"<h2>{html.escape(caption)}</h2><table border='1'>")
        parts.append("<tr><th>quantity</th><th>value</th></tr>")
        parts += [f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in rows]
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


class Report(Stage):
    name = "report"
    description = "Markdown/HTML report of the pipeline's results."
    upstream = ("corpus_stats",)
    config_keys = ("report",)

    def run(self, ctx: StageContext) -> None:
        title = ctx.cfg("report").title
        tables = [corpus_table(ctx.inputs["corpus_stats"])]
        md = ctx.output_dir / "report.md"
        md.write_text(to_markdown(title, tables))
        page = ctx.output_dir / "report.html"
        page.write_text(to_html(title, tables))
        ctx.log_artifact(md)
        ctx.log_artifact(page)
        ctx.log_metrics({"tables": len(tables)})
