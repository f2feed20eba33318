"""How long a stage is expected to take, for the scheduler's order and the log's ETA: per
profile and per precision, since ``profile=small`` trains ten times longer than ``tiny`` and a
bf16 run on a CPU with bf16 units is faster than an fp32 one.

An estimate is looked up under a *label*: the profile (``tiny``, ``small``, ``gpu1-rehearsal``
for ``gpu1`` with ``rehearsal=true``), with ``/bf16`` appended where the stage computes in bf16
(`stage_precision`). In that order of preference:

1. the latest completed output of the stage in the artifact store whose manifest carries the
   same label (`past_seconds`; the worker writes ``profile`` into every manifest);
2. the stage table's ``expected_seconds`` (`stages.framework.stage_table`): a number, or a
   mapping ``{label: seconds}`` tried as ``<profile>/<precision>``, then ``<profile>``, then
   ``tiny`` (the profile every stage has run under), then the class default.

A manifest written before manifests named their profile never stands for another profile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FALLBACK_PROFILE = "tiny"


def profile_label(profile: str, rehearsal: bool = False) -> str:
    """The profile part of a label: ``gpu1-rehearsal`` for a rehearsal of ``gpu1``."""
    return f"{profile}-rehearsal" if rehearsal else profile


def stage_precision(config: Mapping[str, Any]) -> str | None:
    """The precision a stage computes in, from its config sections (``stage_config``'s plain
    values, as manifests hold them): a section ``eval.dtype`` or a training job's
    ``precision``; None for a stage that reads neither."""
    for key, value in config.items():
        if key.endswith((".dtype", ".precision")) and isinstance(value, str):
            return value
        if isinstance(value, Mapping) and isinstance(value.get("precision"), str):
            return str(value["precision"])
    return None


def label(profile: str, precision: str | None) -> str:
    """``profile``, or ``profile/bf16`` for a stage computing in bf16 (fp32 is the default)."""
    return f"{profile}/{precision}" if precision not in (None, "fp32") else profile


def table_seconds(value: Any, profile: str, precision: str | None, default: float) -> float:
    """A stage table ``expected_seconds`` value read for ``profile`` and ``precision`` (module
    docstring); ``default`` where it holds nothing that applies."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, Mapping):
        for candidate in (label(profile, precision), profile, FALLBACK_PROFILE):
            if candidate in value:
                return float(value[candidate])
    return default


def past_seconds(manifests: Mapping[str, Iterable[Mapping[str, Any]]], labels: Mapping[str, str]) -> dict[str, float]:
    """Per stage, the duration of its latest completed output (by ``finished_at``) among
    ``manifests[stage]`` whose label (`manifest_label`) is ``labels[stage]``."""
    found: dict[str, float] = {}
    for name, wanted in labels.items():
        same = [m for m in manifests.get(name, ()) if manifest_label(m) == wanted
                and isinstance(m.get("seconds"), (int, float))]
        if same:
            latest = max(same, key=lambda m: str(m.get("finished_at", "")))
            found[name] = float(latest["seconds"])
    return found


def manifest_label(manifest: Mapping[str, Any]) -> str | None:
    """The label of a completed output: its profile and its config's precision; None for a
    manifest that names no profile (written before they did)."""
    profile = manifest.get("profile")
    if not isinstance(profile, str):
        return None
    config = manifest.get("config")
    return label(profile, stage_precision(config) if isinstance(config, Mapping) else None)
