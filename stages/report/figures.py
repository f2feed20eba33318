"""The figures the report draws itself from its inputs (read through their contracts), and
the ones upstream stages drew that it shows.

Drawn here, into the report folder's ``figures/``, in the shared style (`stages.common.figures`):
each trained model's dev loss by evaluation (`training_curves`, from the trainer states'
``dev_losses``), Nugget2D's reconstruction BLEU by document length (`bleu_by_length`, the
``bleu_L<n>`` columns of ``eval_nugget2d_ae``) and QA accuracy / summary ROUGE-L by the share
of the context kept (`quality_by_compression`, the ``context_ratio`` column of ``eval_qa`` /
``eval_summarization``). Every series carries markers (a series of one point draws nothing
without one); a figure without data says so on itself. Shown from upstream: calibrate_threshold's
scores histogram, captioned with the calibrated Lambda (`threshold_figure`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stages.artifacts.evaluate import EvalTable
from stages.artifacts.trainer_state import TrainingSummary
from stages.common.figures import (
    DPI,
    LABEL_SIZE,
    LEGEND_SIZE,
    TICK_SIZE,
    TITLE_SIZE,
    finish,
    new_figure,
    note_if_equal,
    note_no_data,
)
from stages.nugget2d.artifacts import StoredCalibratedThreshold
from stages.report.efficiency_tables import decode_label


@dataclass(frozen=True)
class Figure:
    """A figure the report shows: drawn by ``stage`` (the report itself or an evaluation) at ``path``."""

    stage: str
    path: Path
    caption: str


def training_curves(summaries: Sequence[TrainingSummary], path: Path) -> Figure:
    """Each trained model's dev loss at step 0 and at each evaluation after it: one panel per
    training stage (small multiples: a run trains dozens of models, one legend cannot name them)."""
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.ticker import MaxNLocator

    curves = [(s.model, [s.dev_loss_before, *s.dev_losses]) for s in summaries if s.dev_losses]
    stages: dict[str, list[tuple[str, list[float]]]] = {}
    for model, losses in curves:
        stage, _, name = model.partition("/")
        stages.setdefault(stage, []).append((name or stage, losses))
    columns = 3 if len(stages) > 2 else max(1, len(stages))
    rows = max(1, -(-len(stages) // columns))
    if not stages:
        fig, ax = new_figure()
        note_no_data(ax, "no trained model recorded dev losses")
        finish(fig, ax, "Dev loss per evaluation", "evaluation (0 = before the first update)",
               "dev loss (nats / target token)", path)
    else:
        fig = MplFigure(figsize=(3.6 * columns, 2.9 * rows))
        axes = fig.subplots(rows, columns, squeeze=False).reshape(-1)
        for ax, (stage, models) in zip(axes, stages.items(), strict=False):
            for name, losses in models:
                ax.plot(range(len(losses)), losses, marker="o", markersize=3, label=name)
            note_if_equal(ax, [x for _, losses in models for x in losses])
            ax.set_title(stage, fontsize=TITLE_SIZE - 1)
            ax.tick_params(labelsize=TICK_SIZE - 1)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if len(models) > 1:
                ax.legend(fontsize=LEGEND_SIZE - 2, ncol=2 if len(models) > 4 else 1)
        for ax in axes[len(stages):]:
            ax.set_visible(False)
        fig.supxlabel("evaluation (0 = before the first update)", fontsize=LABEL_SIZE)
        fig.supylabel("dev loss (nats / target token)", fontsize=LABEL_SIZE)
        fig.tight_layout()
        fig.savefig(path, dpi=DPI)
    without = [s.model for s in summaries if not s.dev_losses]
    caption = (f"{len(curves)} trained models of {len(stages)} training stages, one panel per stage: the dev loss "
               "before training (0) and at each evaluation after it (trainer_state.json's dev_losses; each averages "
               "over the model's dev tokens, the training table's n).")
    if without:
        caption += f" Without recorded evaluations (not drawn): {', '.join(without)}."
    return Figure("report", path, caption)


def _series(table: EvalTable) -> dict[str, list[str]]:
    """The systems of ``table`` grouped by method (the system name's first word)."""
    out: dict[str, list[str]] = {}
    for row in table.rows:
        out.setdefault(row.system.split()[0], []).append(row.system)
    return out


def bleu_by_length(table: EvalTable, stage: str, path: Path) -> Figure:
    """Reconstruction BLEU by document length L (columns ``bleu_L<n>``), one line per system."""
    lengths = sorted(int(m.group(1)) for c in table.columns if (m := re.fullmatch(r"bleu_L(\d+)", c.key)))
    fig, ax = new_figure()
    values: list[float] = []
    for row in table.rows:
        points = [(n, v) for n in lengths if isinstance(v := row.metrics.get(f"bleu_L{n}"), int | float)]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=row.system)
            values += [p[1] for p in points]
    if not values:
        note_no_data(ax, "no BLEU by length measured")
    else:
        note_if_equal(ax, values)
    finish(fig, ax, "Nugget2D vs ICAE: reconstruction BLEU by document length", "document length L (tokens)",
           "BLEU", path)
    n = {row.metrics.get(f"n_bleu_L{lengths[0]}") for row in table.rows} if lengths else set()
    n_text = ", ".join(str(int(x)) for x in n if isinstance(x, int | float))
    return Figure("report", path, f"From {stage}: BLEU of the text decoded from the compressed document, per "
                  f"length L ({', '.join(map(str, lengths)) or 'none'}); documents per point: {n_text or 'unknown'}.")


def quality_by_compression(table: EvalTable, stage: str, metric: str, label: str, path: Path) -> Figure:
    """``metric`` by the share of the context kept (``context_ratio``), one series per method."""
    fig, ax = new_figure()
    values: list[float] = []
    for method, systems in _series(table).items():
        rows = [r for r in table.rows if r.system in systems]
        points = sorted((float(x), float(y)) for r in rows
                        if isinstance(x := r.metrics.get("context_ratio"), int | float)
                        and isinstance(y := r.metrics.get(metric), int | float))
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=method)
            values += [p[1] for p in points]
    if not values:
        note_no_data(ax, f"no {metric} with a context ratio measured")
    else:
        note_if_equal(ax, values)
    finish(fig, ax, f"{label} by compression", "share of the context kept (context_ratio; 1 = full)", label, path)
    n = sorted({r.n for r in table.rows if r.n is not None})
    return Figure("report", path, f"From {stage}: {label} against the share of the context each method keeps; "
                  f"examples per point: {', '.join(map(str, n)) or 'unknown'}.")


def decode_cost_by_context(table: EvalTable, stage: str, path: Path) -> Figure:
    """eval_efficiency's ms per generated token by context length, one line per system, with each
    point's 95% interval over repeats as an error bar where the stage computed one; Full's and the
    first Nugget2D's memory-bandwidth bounds dotted."""
    fig, ax = new_figure()
    series: dict[str, list[tuple[float, float, tuple[float, float] | None, float]]] = {}
    for row in table.rows:
        x, y, bound = (row.metrics.get(k) for k in ("context", "ms_per_token", "bound_ms"))
        if isinstance(x, int | float) and isinstance(y, int | float) and isinstance(bound, int | float):
            series.setdefault(decode_label(row), []).append((float(x), float(y), row.interval.get("ms_per_token"), float(bound)))
    values = []
    for label, points in series.items():
        points.sort()
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        errors = [[p[1] - p[2][0] if p[2] else 0.0 for p in points], [p[2][1] - p[1] if p[2] else 0.0 for p in points]]
        line = ax.errorbar(xs, ys, yerr=errors, marker="o", capsize=3, label=label)
        if label == "full" or label == next((k for k in series if k.startswith("nugget2d")), None):
            ax.plot(xs, [p[3] for p in points], linestyle=":", color=line[0].get_color(), label=f"{label} bound")
        values += ys
    if not values:
        note_no_data(ax, "no decoding time measured")
    finish(fig, ax, "Decoding cost by context length", "document tokens in the context", "ms per generated token", path)
    repeats = sorted({r.n for r in table.rows if r.n is not None and r.metrics.get("ms_per_token") is not None})
    with_interval = any("ms_per_token" in r.interval for r in table.rows)
    return Figure("report", path, f"From {stage}: mean ms per generated token over {', '.join(map(str, repeats)) or '?'} "
                  "interleaved repeats per point" + (", error bars the 95% bootstrap interval over repeats" if with_interval
                  else " (no error bars: fewer repeats than an interval needs)") + "; dotted: the memory-bandwidth bound "
                  "(weights + the cache a step reads, over the bandwidth measured by the stage).")


def threshold_figure(stored: StoredCalibratedThreshold) -> Figure | None:
    """calibrate_threshold's histogram of scorer scores, captioned with Lambda (None: not drawn)."""
    path = stored.histogram()
    if path is None:
        return None
    t = stored.output
    held = t.metrics.get("heldout_ratio_mean")
    held_text = f"; held-out ratio at Lambda {held:.3f} (mean over {t.metrics.get('heldout_ratio_docs', 0):.0f} " \
                "documents)" if held is not None else ""
    return Figure(stored.where.stage, path,
                  f"Nugget2D scorer scores with the calibrated threshold Lambda = {t.threshold:.4g} for ratio "
                  f"r = {t.ratio:g} (scorer of stage {t.scorer_stage}, window {t.scorer_window}){held_text}.")
