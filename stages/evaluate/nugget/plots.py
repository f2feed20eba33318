"""Figures of the Nugget evaluations, drawn with matplotlib's Agg backend (no display)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bleu_vs_ratio(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Nugget fig. 4: BLEU of texts decoded from nuggets vs ratio r, one line per
    (objective, scorer layer); single-vector baselines drawn at r = 0."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    lines: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        if r["kind"] == "nugget":
            key = f"Nugget {r['objective'].upper()} (l={r['scorer_layer']})"
            lines.setdefault(key, []).append((r["ratio"], r["bleu"]))
    for key, points in sorted(lines.items()):
        xs, ys = zip(*sorted(points), strict=True)
        ax.plot(xs, ys, marker="o", label=key)
    for r in rows:
        if r["kind"] == "bottleneck":
            ax.scatter([0.0], [r["bleu"]], marker="x", label=f"{r['baseline']} (single vector)")
    ax.set_xlabel("compression ratio r")
    ax.set_ylabel("BLEU (reference: target of the objective)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def token_frequencies(tokens: Sequence[str], series: dict[str, Sequence[float]], path: Path) -> None:
    """Nugget fig. 5: share of each token among nuggets vs in text (bars per series)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(tokens))], values, width=width, label=name)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(tokens))])
    ax.set_xticklabels([repr(t) for t in tokens], rotation=30, fontsize=8)
    ax.set_ylabel("share of tokens (%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def probability_gain(
    curves: dict[str, tuple[Sequence[int], Sequence[float]]], path: Path, xlabel: str, mark_zero: bool = False,
    ylabel: str = "probability gain",
) -> None:
    """Nugget figs. 7-8: mean probability gain per token index (``mark_zero``: a vertical
    line at index 0, the nugget itself in relative coordinates); ``ylabel`` for other
    per-index curves (fig. 7's distribution of nugget positions)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, (xs, ys) in curves.items():
        ax.plot(xs, ys, label=name)
    if mark_zero:
        ax.axvline(0, color="grey", lw=0.5)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if curves:  # (an empty figure when no document had such a nugget: the JSON gives the counts)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
