"""What every figure of the pipeline shares: its size and resolution, its title and axis
labels, a legend where it has named series, and a visible note where its data cannot
show anything (all values equal, or none at all).

Figures are `matplotlib.figure.Figure` objects built without pyplot: no global figure
registry to leak into and no backend to select (stages run in Ray workers without a
display; saving a PNG uses the Agg canvas either way). The drawing functions return the
figure so tests can read its title, labels and notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 150  # readable when the report shows the PNG at its size, sharp when zoomed
SIZE = (7.0, 4.2)  # inches: at DPI, 1050 x 630 pixels; the font sizes below stay legible at that width
TITLE_SIZE = 11
LABEL_SIZE = 10
TICK_SIZE = 9
LEGEND_SIZE = 8
NOTE_SIZE = 10


def new_figure(size: tuple[float, float] = SIZE) -> tuple[Figure, Axes]:
    """A figure with one axes, ticks at the shared size."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    ax = fig.subplots()
    ax.tick_params(labelsize=TICK_SIZE)
    return fig, ax


def all_equal(values: Sequence[float] | np.ndarray) -> bool:
    """Whether a plot of ``values`` is a flat line: at least two values, all within
    `numpy.allclose`'s default tolerance (relative 1e-5, absolute 1e-8) of the first.
    One value is a point, not a line, and no values is `note_no_data`'s case."""
    array = np.asarray(values, dtype=float).reshape(-1)
    return array.size >= 2 and bool(np.allclose(array, array[0]))


def _note(ax: Axes, text: str) -> None:
    """A boxed note in the upper left corner: equal values draw in the middle (a flat line
    is centred, a histogram of one value is one central bar) and `finish` moves the legend
    to the upper right when there is a note."""
    ax.text(0.02, 0.97, text, transform=ax.transAxes, ha="left", va="top", fontsize=NOTE_SIZE,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "grey", "alpha": 0.9})


def note_if_equal(ax: Axes, values: Sequence[float] | np.ndarray, unit: str = "") -> bool:
    """Write "all values equal (x)" on ``ax`` when ``values`` are `all_equal`, so a flat
    line (e.g. BLEU 0.0 for every model of a tiny run) reads as a finding rather than a
    drawing error. Returns whether the note was written."""
    array = np.asarray(values, dtype=float).reshape(-1)
    if not all_equal(array):
        return False
    _note(ax, f"all values equal ({array[0]:.4g}{' ' + unit if unit else ''})")
    return True


def note_no_data(ax: Axes, why: str) -> None:
    """Say on an empty figure why it is empty."""
    _note(ax, f"no data: {why}")


def finish(fig: Figure, ax: Axes, title: str, xlabel: str, ylabel: str, path: Path) -> Figure:
    """Title and axis labels, a legend when any series is named (away from a note), tight
    layout, then the figure saved at `DPI` to ``path``. Returns ``fig``."""
    ax.set_title(title, fontsize=TITLE_SIZE)
    ax.set_xlabel(xlabel, fontsize=LABEL_SIZE)
    ax.set_ylabel(ylabel, fontsize=LABEL_SIZE)
    handles, labels = ax.get_legend_handles_labels()
    if labels:
        ax.legend(handles, labels, fontsize=LEGEND_SIZE, loc="upper right" if ax.texts else "best")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    return fig
