"""Stages used only by tests: one that can be made to crash half-way."""

from __future__ import annotations

from pathlib import Path

from stages.framework.dag import Dag
from stages.framework.stage import Stage, StageContext


class Source(Stage):
    name = "source"
    config_keys = ("report.title",)

    def run(self, ctx: StageContext) -> None:
        ctx.write_json("value.json", {"title": ctx.cfg("report.title")})
        ctx.log_metrics({"written": 1})


class Fragile(Stage):
    """Writes part of its output, then crashes while a CRASH file sits in sources_dir."""

    name = "fragile"
    upstream = ("source",)
    config_keys = ("report.title",)

    def run(self, ctx: StageContext) -> None:
        (ctx.output_dir / "part1.txt").write_text("half done")
        if (Path(ctx.sources_dir) / "CRASH").exists():
            raise RuntimeError("injected crash after a partial write")
        (ctx.output_dir / "part2.txt").write_text("done")
        ctx.log_metrics({"parts": 2})


FAKE_DAG = Dag([Source, Fragile])
