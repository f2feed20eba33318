"""Stages used only by tests: one that can be made to crash half-way, one whose metrics
are the headline numbers of the parent run."""

from __future__ import annotations

from pathlib import Path

from stages.corpora.corpus_stats import CorpusStats
from stages.framework.dag import Dag
from stages.framework.stage import Stage, StageContext


class Source(Stage):
    name = "source"
    config_keys = ("report.title",)

    def run(self, ctx: StageContext) -> None:
        ctx.write_json("value.json", {"title": ctx.cfg("report.title")})
        ctx.log_metrics({"written": 1})


class Fragile(Stage):
    """Writes part of its output and a file in its work space, then crashes while a CRASH
    file sits in sources_dir."""

    name = "fragile"
    upstream = ("source",)
    config_keys = ("report.title",)

    def run(self, ctx: StageContext) -> None:
        (ctx.output_dir / "part1.txt").write_text("half done")
        Path(ctx.work_uri).mkdir(parents=True, exist_ok=True)
        (Path(ctx.work_uri) / "resume.txt").write_text("state of the attempt")
        if (Path(ctx.sources_dir) / "CRASH").exists():
            raise RuntimeError("injected crash after a partial write")
        (ctx.output_dir / "part2.txt").write_text("done")
        ctx.log_metrics({"parts": 2})


class Digest(Stage):
    """A small real consumer of corpus_stats (the pipeline's report reads every stage)."""

    name = "digest"
    upstream = ("corpus_stats",)
    config_keys = ("report.title",)

    def run(self, ctx: StageContext) -> None:
        from stages.corpora.artifacts import CorpusStatistics

        stats = CorpusStatistics.read(ctx.inputs["corpus_stats"]).stats
        text = f"# {ctx.cfg('report.title')}\n\n{stats['documents']} documents from {stats['source']}\n"
        (ctx.output_dir / "digest.md").write_text(text)
        ctx.log_metrics({"documents": stats["documents"]})


FAKE_DAG = Dag([Source, Fragile])
STATS_DAG = Dag([CorpusStats, Digest])


class Headline(Stage):
    """Its metrics are the pipeline's headline numbers (copied to the parent run), and its
    run is named after a config value, like the report and the training stages."""

    name = "headline"
    upstream = ("corpus_stats",)
    config_keys = ("report.title", "data.corpus_stats")
    run_name_keys = ("top=data.corpus_stats.top_words", "report.title")
    parent_metrics = True
    parent_tables = ("rows.json",)  # as the report's results.json

    def run(self, ctx: StageContext) -> None:
        from stages.corpora.artifacts import CorpusStatistics

        stats = CorpusStatistics.read(ctx.inputs["corpus_stats"]).stats
        ctx.write_json("headline.json", {"documents": stats["documents"]})
        # rows with different keys: the table's columns are their union
        ctx.write_json("rows.json", [{"table": "stats", "documents": stats["documents"]},
                                     {"table": "words", "top": 3}])
        ctx.log_metrics({"headline/documents": stats["documents"], "headline/documents_n": 1})


HEADLINE_DAG = Dag([CorpusStats, Headline])


class AfterFragile(Stage):
    """Downstream of ``fragile``: never starts when it crashes."""

    name = "after_fragile"
    upstream = ("fragile",)
    config_keys = ("report.title",)

    def run(self, ctx: StageContext) -> None:
        ctx.write_json("after.json", {"ok": True})
