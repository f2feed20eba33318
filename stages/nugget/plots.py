"""Figures of the Nugget evaluations (figs. 4, 5, 7 and 8 of the paper).

Each function draws one figure with `stages.common.figures` (title, labelled axes with
units, legend, the shared resolution, a note where every value is equal or there is no
data), saves it to ``path`` and returns the `matplotlib.figure.Figure`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stages.common.figures import finish, new_figure, note_if_equal, note_no_data
from stages.common.tokens import display_token

if TYPE_CHECKING:
    from matplotlib.figure import Figure

GAIN_LABEL = "probability gain (difference of probabilities)"
MARKED_POINTS = 20  # a curve of fewer points shows each one as a marker


def _counted(values: Sequence[Any], what: str) -> str:
    """``n=<value> <what>`` when every value is the same, else their range."""
    distinct = sorted(set(values))
    if not distinct:
        return f"n=0 {what}"
    return f"n={distinct[0]} {what}" if len(distinct) == 1 else f"n={distinct[0]}-{distinct[-1]} {what}"


def bleu_vs_ratio(rows: Sequence[dict[str, Any]], path: Path) -> Figure:
    """Nugget fig. 4: BLEU of texts decoded from nuggets vs ratio r, one line per
    (objective, scorer layer); single-vector baselines drawn at r = 0."""
    fig, ax = new_figure()
    lines: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        if r["kind"] == "nugget":
            key = f"Nugget {r['objective'].upper()} (scorer layer {r['scorer_layer']})"
            lines.setdefault(key, []).append((r["ratio"], r["bleu"]))
    for key, points in sorted(lines.items()):
        xs, ys = zip(*sorted(points), strict=True)
        ax.plot(xs, ys, marker="o", label=key)
    for r in rows:
        if r["kind"] == "bottleneck":
            ax.scatter([0.0], [r["bleu"]], marker="x", s=50, label=f"{r['baseline']} (single vector, at r = 0)")
    if rows:
        note_if_equal(ax, [r["bleu"] for r in rows], "BLEU")
    else:
        note_no_data(ax, "no system was evaluated")
    docs = _counted([r["n_docs"] for r in rows if "n_docs" in r], "documents per system")
    return finish(fig, ax, f"Nugget fig. 4: reconstruction BLEU vs ratio ({docs})",
                  "compression ratio r (nuggets per token)", "corpus BLEU (0-100)", path)


def token_frequencies(tokens: Sequence[str], series: Mapping[str, Sequence[float]], path: Path) -> Figure:
    """Nugget fig. 5: share (%) of each token among nuggets vs in text, one bar per series;
    tokens shown as words (`display_token`: no BPE markers)."""
    fig, ax = new_figure()
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(tokens))], values, width=width, label=name)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(tokens))])
    ax.set_xticklabels([display_token(t) for t in tokens], rotation=30, ha="right")
    if tokens and series:
        note_if_equal(ax, [v for values in series.values() for v in values], "%")
    else:
        note_no_data(ax, "no nugget tokens were counted")
    return finish(fig, ax, "Nugget fig. 5: most frequent nugget tokens, among nuggets vs in text",
                  "token (the most frequent among the first model's nuggets)", "share of tokens (%)", path)


def probability_gain(
    curves: Mapping[str, tuple[Sequence[int], Sequence[float]]], path: Path, title: str, xlabel: str,
    mark_zero: bool = False, ylabel: str = GAIN_LABEL,
) -> Figure:
    """Nugget figs. 7-8: mean probability gain per token index (``mark_zero``: a vertical
    line at index 0, the nugget itself in relative coordinates); ``ylabel`` for other
    per-index curves (fig. 7's distribution of nugget positions)."""
    fig, ax = new_figure()
    for name, (xs, ys) in curves.items():
        # markers where points are few: a curve of one point draws nothing without one
        ax.plot(xs, ys, label=name, marker="o" if len(xs) < MARKED_POINTS else None, markersize=4)
    if mark_zero:
        ax.axvline(0, color="grey", lw=0.5)
    ax.axhline(0, color="grey", lw=0.5)
    if curves:
        note_if_equal(ax, [y for _, ys in curves.values() for y in ys])
    else:  # no document had such a nugget (the JSON gives the counts)
        note_no_data(ax, "no document had a nugget shown here")
    return finish(fig, ax, title, xlabel, ylabel, path)
