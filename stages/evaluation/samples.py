"""Per-sample records of the evaluations, at lm-evaluation-harness's ``--log_samples`` level:
one row per example and system holding what the model read, what it should have produced,
what it produced, every metric of that example, the system's settings and per-example flags.

Every evaluation recipe builds its rows with `Sample` (so the stage and ``nugget eval``
get the same rows), and the stage writes them with `write_samples` (the file keeps every
text whole) and logs them as an MLflow table with `log_samples` (`table_rows`: uniform
columns; texts cut only when the table would pass `TABLE_BUDGET` characters).

Row layout (`Sample.row`): ``id``, ``system``, the settings (ratio, h, ...), the inputs
(document, question, the prompt text fed, ...), ``target``, ``output``, the metrics, then
the flags ``empty_output`` (the output is blank) and ``degenerate`` (the output is a
repetition loop, `stages.common.degenerate.is_loop`); both flags are None where the output
is not a generation (perplexity: no output; retrieval: the top hit).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.common.degenerate import is_loop
from stages.common.records import write_jsonl

if TYPE_CHECKING:
    from stages.framework.stage import StageContext

TABLE_FILE = "tables/examples.json"  # the MLflow table of an evaluation's samples
TABLE_BUDGET = 20_000_000  # characters of text in the MLflow table before long texts are cut
MIN_CUT = 200  # a cut text keeps at least this many characters
CUT_MARK = " [...]"  # ends a text cut for the table (never in the JSONL file)
FLAGS = ("empty_output", "degenerate")


def output_flags(output: str | None) -> dict[str, bool | None]:
    """``empty_output`` / ``degenerate`` of one generated text (None when there is none)."""
    if output is None:
        return dict.fromkeys(FLAGS)
    blank = not output.strip()
    return {"empty_output": blank, "degenerate": not blank and is_loop(output)}


@dataclass(frozen=True)
class Sample:
    """One example as one system saw and answered it.

    ``inputs``: what the model read, by name (``document``, ``question``, ``prompt``: the text
    decoded from the token ids fed, ...); ``target``: the answer / reference / original text
    (None where the task has none); ``output``: the system's output (a generation, a restored
    text, the top hits; None where it produces no text); ``metrics``: every number scored on
    this example; ``settings``: the system's settings (ratio, h, ...); ``generated``: whether
    the output is the system's own text (a retrieved passage is not: its flags stay None)."""

    id: str | int
    system: str
    inputs: Mapping[str, Any]
    target: Any
    output: Any
    metrics: Mapping[str, Any]
    settings: Mapping[str, Any] = field(default_factory=dict)
    generated: bool = True  # False: the output is chosen, not generated (a top hit); no flags

    def row(self) -> dict[str, Any]:
        """The flat row (module docstring's layout); a name used twice is an error."""
        parts: list[Mapping[str, Any]] = [
            {"id": self.id, "system": self.system}, self.settings, self.inputs,
            {"target": self.target, "output": self.output}, self.metrics,
            output_flags(self.output if self.generated and isinstance(self.output, str) else None)]
        row: dict[str, Any] = {}
        for part in parts:
            clash = set(row) & set(part)
            if clash:
                raise ValueError(f"sample {self.id!r} of {self.system!r}: {sorted(clash)} given twice")
            row.update(part)
        return row


def rows_of(samples: Iterable[Sample]) -> list[dict[str, Any]]:
    """`Sample.row` of each sample, in order."""
    return [s.row() for s in samples]


def write_samples(path: Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """The rows as JSON lines (`stages.common.records.write_jsonl`), texts whole; returns
    the lines written."""
    return write_jsonl(path, (dict(r) for r in rows))


def _cell(value: Any) -> Any:
    """A table cell: scalars as they are (non-finite floats as None, which JSON cannot hold),
    anything else as its JSON text."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False)


def table_rows(rows: Sequence[Mapping[str, Any]], budget: int = TABLE_BUDGET) -> list[dict[str, Any]]:
    """The rows for an MLflow table: every row with every column (missing: None), non-scalar
    values as JSON text; when the texts pass ``budget`` characters in all, each text is cut to
    the same length (at least `MIN_CUT`) and ends with `CUT_MARK`."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    table = [{c: _cell(row.get(c)) for c in columns} for row in rows]
    texts = [v for row in table for v in row.values() if isinstance(v, str)]
    if sum(map(len, texts)) <= budget:
        return table
    cap = max(MIN_CUT, budget // max(len(texts), 1))
    return [{c: v[:cap] + CUT_MARK if isinstance(v, str) and len(v) > cap + len(CUT_MARK) else v
             for c, v in row.items()} for row in table]


def log_samples(ctx: StageContext, path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``rows`` to ``path`` (`write_samples`), log the file as an artifact and the rows
    as the MLflow table `TABLE_FILE` (`table_rows`)."""
    write_samples(path, rows)
    ctx.log_artifact(path)
    if rows:
        ctx.log_table(table_rows(rows), TABLE_FILE)
