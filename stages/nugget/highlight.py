"""Nugget fig. 6 as HTML: tokens shaded by score, nuggets on a green background."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence


def highlight_document(tokens: Sequence[str], scores: Sequence[float], selected: Sequence[bool]) -> str:
    """One document as HTML spans; darker text = higher score (min-max over the document)."""
    finite = [s for s in scores if math.isfinite(s)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    spans = []
    for tok, s, sel in zip(tokens, scores, selected, strict=True):
        level = (s - lo) / (hi - lo) if hi > lo and math.isfinite(s) else 0.0
        grey = int(200 - 200 * level)  # 200 = light grey, 0 = black
        style = f"color: rgb({grey},{grey},{grey});" + (" background: #b6f2b6;" if sel else "")
        spans.append(f"<span title='score {s:.3f}' style='{style}'>{html.escape(tok)}</span>")
    return "".join(spans)


def highlight_page(title: str, documents: Sequence[str]) -> str:
    body = "".join(f"<p style='font-family: monospace; line-height: 1.6'>{d}</p><hr>" for d in documents)
    return (f"<html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"
            f"<h1>{html.escape(title)}</h1><p>Darker text: higher nugget score; green: selected as a nugget.</p>"
            f"{body}</body></html>")
