"""The burst's JSON results: written atomically, each with the same header, and each beside
the number the paper reports for it (read from `stages.report.published`, the report's own
record of the papers, so the burst and the report quote the same text).

Every result has: ``schema``, ``experiment``, ``system``, ``ratio``, ``status``, ``device`` /
``device_name`` / ``dtype``, ``versions``, ``recipe`` (the preset, with ``why`` per choice),
``reference`` (``value``, ``source``, ``setting``: how the paper's run differs from this one)
and, once it ran, ``train`` and ``eval`` (see docs/headline.md for every field).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from stages.report.published import PUBLISHED, SOURCES

SCHEMA = "nugget-headline-result/1"
DONE = "done"
SCORING = "trained; scoring not finished"  # written between training and scoring


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically (a temporary sibling, then a rename): a call killed
    mid-write leaves the previous version, never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


NUGGET_SETTING = ("the paper: pretrained mBART-50 (602M parameters) fine-tuned on WMT19 en-zh English "
                  "documents of <= 128 subwords, scored on the WMT19 dev set with beam 5; here: a BART trained "
                  "from scratch for seconds on offline English documents, scored on held-out documents")
NUGGET2D_SETTING = ("the paper: LLaMA-7B on the Pile, LoRA, trained to convergence; here: SmolLM2-135M-Instruct "
                    "(its Q4_1 GGUF dequantised), LoRA, trained for seconds on offline English documents of "
                    "<= 128 subwords, greedy reconstruction of held-out documents")


def nugget_reference(ratio: float) -> dict[str, Any]:
    """What Nugget §5.1 / fig. 4 reports for AE reconstruction at ``ratio``."""
    if ratio >= 0.1 - 1e-9:
        value: str | None = PUBLISHED["nugget_fig4"]["ae_r>=0.1"]["bleu"]
    else:
        value = None
    return {"value": value, "source": SOURCES["nugget_fig4"], "setting": NUGGET_SETTING,
            "note": "" if value else "fig. 4 plots this ratio; the text gives a number only for r >= 0.1"}


def nugget2d_reference(system: str, ratio: float) -> dict[str, Any]:
    """What Nugget2D §4 reports for ``system`` (nugget2d | icae) at ``ratio``."""
    cell = PUBLISHED["nugget2d_autoencoding"].get(f"{system}_{ratio:g}", {})
    value = cell.get("bleu")
    note = "" if value else ("fig. 5 plots it by document length; the text gives no number" if system == "nugget2d"
                             else "the paper takes ICAE's numbers from Ge et al. (2023) §3.3.1; none in its text")
    return {"value": value, "source": SOURCES["nugget2d_autoencoding"], "setting": NUGGET2D_SETTING, "note": note}


def pair_reference() -> dict[str, Any]:
    """What Nugget2D §4.2 says of Nugget2D against ICAE (no number in the text)."""
    return {"value": "Nugget2D - ICAE >= 0: 'comparable performance with the ICAE baseline for short sequences "
                     "and better performance for long sequences' (no number in the text)",
            "source": "Nugget2D §4.2 on fig. 5", "setting": NUGGET2D_SETTING, "note": ""}


def fig5_reference() -> dict[str, Any]:
    """Nugget §5.2's numbers for fig. 5: the share of 'the' among AE nuggets and in the text."""
    return {"value": {"the_share_nuggets": PUBLISHED["nugget_fig5"]["the_ae"]["share_nuggets"],
                      "the_share_text": PUBLISHED["nugget_fig5"]["the_ae"]["share_text"]},
            "source": SOURCES["nugget_fig5"],
            "setting": "the paper: mBART-50 AE at r = 0.1, 128 WMT19 documents; delimiters (commas, periods, "
                       "conjunctions, EOS) are the most frequent nuggets"}


def result_header(experiment: str, system: str, ratio: float, run: dict[str, Any], recipe: dict[str, Any],
                  reference: dict[str, Any]) -> dict[str, Any]:
    """The fields every result starts with (``run``: device, device_name, dtype, versions)."""
    return {"schema": SCHEMA, "experiment": experiment, "system": system, "ratio": ratio, "status": "",
            **run, "recipe": recipe, "reference": reference}
