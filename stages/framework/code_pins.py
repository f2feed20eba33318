"""Accepting a code change on purpose: keep a stage's output although its code changed.

A code edit re-keys the stage and everything below it (:mod:`stages.framework.keys`). When a
user knows the edit does not change what the stage computes (a refactor, a new log line, a
speed-up) and the output is expensive (a training of GPU-days), they say so for one stage:

    python pipelines/full.py --accept-code-change train_nugget ...

The planner then looks in the store for a complete output of that stage whose key parts
equal the new ones in everything but the code (same config, upstream keys, inputs and
environment). If there is one, a *pin* is recorded in ``<artifact root>/code_pins.json``:
"code version NEW of this stage is accepted as OLD" (with who, when, and the output kept),
and from then on the stage's key is computed with OLD while its code version is NEW, so it
and its descendants are hits. The pin holds only for exactly that NEW code version: the next
edit is a miss again, and is accepted again, or not. Nothing is ever accepted silently: the
plan line says ``code change accepted``, the stage's MLflow run is tagged with the pin, and
with no such output the run stops, naming the closest output and why it differs.
"""

from __future__ import annotations

import getpass
import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from stages.framework.keys import KeyParts
from stages.framework.store import ArtifactStore

PINS = "code_pins.json"


class CodeChangeError(ValueError):
    """A code change was asked to be accepted where no output can be kept."""


@dataclass(frozen=True)
class Pin:
    """Code version ``code`` of ``stage`` is keyed as ``accepted_as``, the code version of
    the kept output (``key``)."""

    stage: str
    code: str
    accepted_as: str
    key: str
    at: str
    by: str

    def line(self) -> str:
        return f"code {self.code} accepted as {self.accepted_as} ({self.by}, {self.at})"


def _path(store: ArtifactStore) -> str:
    return f"{store.base}/{PINS}"


def load_pins(store: ArtifactStore) -> dict[str, Pin]:
    """The pins recorded in the store (stage -> pin); none when the file is not there."""
    path = _path(store)
    if not store.fs.exists(path):
        return {}
    try:
        raw = json.loads(store.fs.cat_file(path))
        return {name: Pin(**entry) for name, entry in raw.items()}
    except (ValueError, TypeError) as exc:
        raise CodeChangeError(f"{store.root_uri}/{PINS} is not a table of accepted code changes: {exc}; "
                              "fix or delete it (deleting it only makes the accepted stages miss)") from exc


def save_pins(store: ArtifactStore, new: list[Pin]) -> None:
    """Add ``new`` to the store's pins (a stage's newer pin replaces its older one)."""
    if not new:
        return
    pins = {**load_pins(store), **{p.stage: p for p in new}}
    text = json.dumps({name: asdict(p) for name, p in sorted(pins.items())}, indent=2, sort_keys=True) + "\n"
    path = _path(store)
    if store.local:  # readers never see half a file
        tmp = f"{path}.tmp-{time.time_ns()}"
        store.fs.pipe_file(tmp, text.encode())
        store.fs.mv(tmp, path)
    else:
        store.fs.pipe_file(path, text.encode())


def _same_but_code(parts: KeyParts, recorded: dict[str, Any]) -> bool:
    mine = parts.record()
    return recorded.get("code") != mine["code"] and all(
        recorded.get(k) == v for k, v in mine.items() if k != "code"
    )


def accept(parts: KeyParts, store: ArtifactStore) -> Pin | None:
    """A pin keeping the latest complete output of ``parts.stage`` that differs from
    ``parts`` in its code alone; None when there is none."""
    candidates = [
        m for m in store.manifests(parts.stage)
        if isinstance(m.get("key_parts"), dict) and _same_but_code(parts, m["key_parts"])
        and store.is_complete(parts.stage, str(m.get("key")))
    ]
    if not candidates:
        return None
    kept = max(candidates, key=lambda m: str(m.get("finished_at", "")))
    return Pin(stage=parts.stage, code=parts.code, accepted_as=kept["key_parts"]["code"], key=str(kept["key"]),
               at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), by=getpass.getuser())
