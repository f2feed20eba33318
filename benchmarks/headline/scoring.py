"""Reconstruction BLEU with the report's method (docs/report.md): sacrebleu on detokenised text,
corpus-level, from per-document sufficient statistics kept as a `UnitSample` of documents,
so its 95% interval is the percentile bootstrap over documents and two systems scored on the
same documents get the *paired* interval of their difference (`stages.common.resampling`).

The bootstrap is scipy's. A GPU image without scipy still gets every BLEU; its intervals are
left empty with the reason, and `fill_intervals` computes them later from the per-document
statistics every result keeps (on any machine with scipy, e.g. when the results are collected).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stages.common.degenerate import constant_outputs
from stages.common.resampling import MIN_UNITS, UnitSample, difference
from stages.evaluation.metrics import bleu_statistics, corpus_bleu

UNIT = "document"
NO_SCIPY = "scipy is not installed here: interval left for collect time (benchmarks.headline.scoring.fill_intervals)"
SAMPLES = 8  # documents shown with their reconstruction in each result


def scipy_available() -> bool:
    """Whether scipy (the bootstrap behind every interval) can be imported here."""
    import importlib.util

    try:
        return importlib.util.find_spec("scipy") is not None
    except ValueError:  # a module registered without a spec
        return False


def _interval(compute: Any) -> tuple[list[float] | None, str]:
    """``compute()``'s interval, or None and why (too few units, no scipy)."""
    try:
        found = compute()
    except ImportError:
        return None, NO_SCIPY
    if found is None:
        return None, f"fewer than {MIN_UNITS} documents, or BLEU undefined: no interval (docs/report.md)"
    if hasattr(found, "low"):
        return [found.low, found.high], ""
    return [float(found[0]), float(found[1])], ""


def bleu_result(hypotheses: Sequence[str], references: Sequence[str], ids: Sequence[str]) -> dict[str, Any]:
    """Corpus BLEU of ``hypotheses`` against ``references`` (one per document ``ids``) with its
    interval, the per-document statistics behind both, and a few examples."""
    sample = UnitSample.of(UNIT, "bleu", list(ids), bleu_statistics(hypotheses, references))
    interval, note = _interval(sample.interval)
    flag = constant_outputs(list(hypotheses)) if len(hypotheses) else None
    return {"bleu": sample.value(), "bleu_sacrebleu": corpus_bleu(hypotheses, references),
            "n_documents": sample.n, "interval": interval,
            "interval_method": "95% percentile bootstrap over documents (2000 resamples, seed 0)",
            "interval_note": note, "degenerate": flag or "",
            "per_document": sample.to_json(),
            "samples": [{"id": i, "reference": r, "reconstruction": h}
                        for i, r, h in zip(list(ids)[:SAMPLES], references[:SAMPLES], hypotheses[:SAMPLES],
                                           strict=True)]}


def cell(value: float, interval: list[float] | None, n: int, flag: str = "", note: str = "") -> dict[str, Any]:
    """A number as the results' top level shows it (and benchmarks/gpu_check reads it):
    ``{value, low, high, n, flags, interval_note}``; low / high None without an interval."""
    low, high = interval if interval else (None, None)
    return {"value": value, "low": low, "high": high, "n": n, "flags": [flag] if flag else [], "interval_note": note}


def paired_difference(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """``a - b`` of two `bleu_result` records scored on the same documents, with the paired
    interval over documents (None with the reason where it cannot be had)."""
    sa, sb = UnitSample.from_json(a["per_document"]), UnitSample.from_json(b["per_document"])
    value = sa.value() - sb.value()
    interval, note = _interval(lambda: difference(sa, sb))
    return {"difference": value, "interval": interval, "interval_note": note,
            "interval_method": "paired 95% percentile bootstrap over the documents both were scored on",
            "n_documents": sa.n, "paired": set(sa.ids) == set(sb.ids)}


def fill_intervals(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` (a result, or a summary) with every interval that was left empty for want of
    scipy computed from the per-document statistics it keeps: a BLEU's, a pair's difference
    (``a`` / ``b``), fig. 5's shares (``units``). In place; returned for chaining."""
    for value in list(record.values()):
        if isinstance(value, dict):
            fill_intervals(value)
    if record.get("intervals_note") == NO_SCIPY and "units" in record:  # fig. 5's shares
        for key, raw in record["units"].items():
            bounds, _ = _interval(UnitSample.from_json(raw).interval)
            if bounds is not None:
                record["intervals"][key] = bounds
        record["intervals_note"] = ""
    for key in ("bleu", "difference"):  # the top-level cell of a result whose details were just filled
        top = record.get(key)
        if isinstance(top, dict) and top.get("interval_note") == NO_SCIPY:
            source = record.get("eval", record.get("pair", {}))
            if source.get("interval") is not None:
                top["low"], top["high"] = source["interval"]
                top["interval_note"] = ""
    if record.get("interval_note") == NO_SCIPY:
        if "per_document" in record:
            sample = UnitSample.from_json(record["per_document"])
            record["interval"], record["interval_note"] = _interval(sample.interval)
        elif {"a", "b"} <= record.keys():
            pair = paired_difference(record["a"], record["b"])
            record["interval"], record["interval_note"] = pair["interval"], pair["interval_note"]
    return record
